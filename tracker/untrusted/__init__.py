"""Reading what anyone can publish: bounded JSON, artifact parsers, the killable process pool."""
