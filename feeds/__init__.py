"""Everything published: OSV advisories and API, RSS/Atom, badges, pages, the HTTP app."""

__all__: list[str] = []
