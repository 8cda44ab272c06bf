"""The pipeline's systems, one module each: 18 compaction, 19 files first, 20 context, 30 tool loop,
50 memory persist, 55 indexing."""
