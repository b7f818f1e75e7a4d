"""pydantic-ai histories and CLI transcripts: planning a request, digests, replays, the session store.

May import: `_process` and the foundation.
"""
