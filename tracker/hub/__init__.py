"""The Hub, reached one way: the huggingface_hub client, repo ids, retries, pacing, discovery."""
