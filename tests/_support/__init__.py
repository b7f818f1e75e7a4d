"""Helpers shared by the test folders: process lookup, polling, brains, MCP and IPC drivers."""
