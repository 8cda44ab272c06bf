"""The memory model: daily notes, long-term memory, and the `# Memory` prompt section."""
