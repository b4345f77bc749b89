"""A faithful local Hugging Face Hub, for tests and the offline demo.

``HubEmulator(corpus_dir, *, tensor_shapes=None, page_size=None, seed=0)`` replays a corpus
directory (MANIFEST.json + EVENTS.json + ORG/NAME/REVISION/PATH) as model repos and serves
them over HTTP as the Hub answers its official clients, huggingface_hub 2.4 and
@huggingface/hub 2.x (tests/contract drives both over the corpus):

- ``GET /api/models`` (sort=lastModified|createdAt, author, search, limit, full, expand; Link paging)
- ``GET /api/models/{repo}[/revision/{rev}]`` (blobs=true siblings, expand validated, securityStatus,
  ``safetensors`` parameter counts from the weight headers)
- ``GET /api/models/{repo}/commits/{rev}`` (newest first, limit, Link paging by ``p``,
  X-Total-Count, expand[]=formatted)
- ``GET /api/models/{repo}/refs`` (branches, converts, tags, pullRequests with include_prs=1)
- ``GET /api/models/{repo}/tree/{rev}[/{path}]`` (recursive, expand, Link paging by ``cursor``)
- ``POST /api/models/{repo}/paths-info/{rev}`` (paths, expand; form-encoded or a JSON body)
- ``GET /api/models/{repo}/compare/{a}..{b}`` (a unified diff; ``raw=true``: one raw line per file)
- ``GET /api/models/{repo}/safetensors-metadata/{index}`` (main)
- ``GET/HEAD /{repo}/resolve/{rev}/{path}`` (X-Repo-Commit, ETag, X-Linked-Etag/-Size, Range, 304)
- ``GET/HEAD /{repo}/raw/{rev}/{path}`` (what git stores: an LFS file's pointer; Range, 304)

A revision is ``HEAD`` (main), a branch, a tag, ``refs/heads/B``, ``refs/tags/T``,
``refs/pr/N``, a sha or a unique prefix of 7+; quoted (``refs%2Fpr%2F1``) or not.
Errors carry ``X-Error-Code`` (RepoNotFound 401/404, RevisionNotFound, EntryNotFound with
X-Repo-Commit, GatedRepo 401/403) and ``{"error": ...}``. Weight shards named by index files
are served as safetensors headers followed by zeros made on the fly (``weights``); a shard
keeps its oid, size and header until its index file is committed again (an upload), so a
commit that edits only config.json changes no weight file.

Lifecycle: ``url = emu.start(host="127.0.0.1", port=0)``, ``emu.endpoint``, ``emu.stop()``.
Reading: ``repo_ids()``, ``history(repo)`` (Commit list, newest first), ``head(repo)``,
``tree(repo, rev)`` (path -> Blob), ``pull_requests(repo)``.
Scripting (thread-safe while serving): ``publish(repo, files, deletions=, title=, author=,
date=, branch=) -> sha``, ``force_push(repo, drop=1, replace=[Change(...)]) -> sha``,
``delete_repo``, ``set_gated(repo, "auto"|"manual"|False, approved=[tokens])``,
``set_private(repo, True, tokens=[...])``, ``set_disabled``, ``move_repo(old, new)``,
``create_branch(repo, name, revision=)``, ``create_tag(repo, name, revision=)``. Corpus
entries whose path would leave the corpus directory (``..``, absolute) are refused
(CorpusError): they would read, then serve, a file from outside it.
Faults: ``emu.faults`` (``FaultPlan``: error_rate, errors, rate_limit, latency, reset,
truncate, hang, add(Fault), clear, and ``transient_mix(rate, seed=)`` -> ``TransientMix``,
a seeded share of every request failing as a flaky network does). Counters: ``emu.stats`` (``Stats``: requests(kind),
bytes_sent(kind), by_kind, by_status, by_path, bytes_by_path, records, reset).
"""

from tracker.hubsim.blobs import Blob, LfsInfo, git_blob_id
from tracker.hubsim.corpus import RecordedCommit, load_corpus
from tracker.hubsim.emulator import HubEmulator
from tracker.hubsim.errors import CorpusError, HubSimError, ScriptError
from tracker.hubsim.faults import Fault, FaultPlan, Injection, TransientMix
from tracker.hubsim.history import Commit, Repo
from tracker.hubsim.shapes import estimator_tensor_shapes
from tracker.hubsim.stats import RequestRecord, Stats
from tracker.hubsim.store import Change
from tracker.hubsim.weights import TensorShapes, safetensors_header

__all__ = [
    "Blob",
    "Change",
    "Commit",
    "CorpusError",
    "Fault",
    "FaultPlan",
    "HubEmulator",
    "HubSimError",
    "Injection",
    "LfsInfo",
    "RecordedCommit",
    "Repo",
    "RequestRecord",
    "ScriptError",
    "Stats",
    "TensorShapes",
    "TransientMix",
    "estimator_tensor_shapes",
    "git_blob_id",
    "load_corpus",
    "safetensors_header",
]
