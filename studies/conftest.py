"""The studies' tests reuse the project's fixtures (the real Freebase subset, the demo KB)."""

from tests.conftest import demo_kb, fbqa_dir, fbqa_kb, tiny_kb, tiny_ttl  # noqa: F401
