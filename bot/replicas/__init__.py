"""Replicated mode: several Mnemo processes sharing one PostgreSQL database.

Owns what lets any replica take any chat's message in order: the shared journal
(`journal.PgJournal`, the `mnemo_inbox` table), the per-chat FIFO queue that answers it
(`queue.QueueIntake`, procrastinate jobs with `lock=<session key>`, their ends fenced by
`jobs.FencedJobs`), the path locks shared by every replica (`locks.PgLocks`), the workspace's
documents they share (`documents.PgDocuments`, the `mnemo_documents` table, and
`shared_documents.SplitDocuments`: which of them are shared), the roster of owners, paired users
and the claim code (`roster.PgRoster`), the background work one replica at a time runs
(`once.OnceInCluster`), Telegram's send rate shared (`pace.SharedPace`), what `/status` reads of
the queue (`look.JobsLook`) and the schema they need (`database`). Besides, measured and not
yet used: the index's keyword search on PostgreSQL full text (`keywords`, against SQLite FTS5
in benchmarks/pg_index_gate.py). Opt-in with
`BOT_STORE__URL=postgresql://…`; its packages are the `mnemo[replicas]` extra, imported only here.
"""
