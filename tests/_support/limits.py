"""A subscription's usage limits as the offline backend serves them: the refusal's headers, a login's environment."""

from __future__ import annotations

from claudecode_model.testing import OfflineBackend


def limit_headers(resets: int, claim: str = "five_hour") -> dict[str, str]:
    """The headers of a subscription's usage limit refusal (``five_hour`` or ``seven_day``) resetting at ``resets``."""
    short = {"five_hour": "5h", "seven_day": "7d"}[claim]
    return {
        "anthropic-ratelimit-unified-status": "rejected",
        "anthropic-ratelimit-unified-reset": str(resets),
        "anthropic-ratelimit-unified-representative-claim": claim,
        f"anthropic-ratelimit-unified-{short}-status": "rejected",
        f"anthropic-ratelimit-unified-{short}-reset": str(resets),
        f"anthropic-ratelimit-unified-{short}-utilization": "1.0",
    }


def subscription_env(backend: OfflineBackend) -> dict[str, str]:
    """The backend's environment with a (fake) subscription login instead of an API key."""
    env = {name: value for name, value in backend.cli_env().items() if name != "ANTHROPIC_API_KEY"}
    return {**env, "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-offline-test"}
