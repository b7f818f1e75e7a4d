"""pytest plugin of claudecode-model (fixtures for the offline backend)."""
