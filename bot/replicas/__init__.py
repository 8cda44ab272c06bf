"""Replicated mode: several Mnemo processes sharing one PostgreSQL database.

Owns what lets any replica take any chat's message in order: the shared journal
(`journal.PgJournal`, the `mnemo_inbox` table), the per-chat FIFO queue that answers it
(`queue.QueueIntake`, procrastinate jobs with `lock=<session key>`, their ends fenced by
`jobs.FencedJobs`; quick follow-ups answered together, `journal.with_follow_ups`), a turn's hold
on its message and the stall sweep (`lease`), the path locks shared by every replica
(`locks.PgLocks`), the workspace's documents they share (`documents.PgDocuments`, the
`mnemo_documents` table, and `shared_documents.SplitDocuments`: which of them are shared), the
roster of owners, paired users and the claim code (`roster.PgRoster`), the background work one
replica at a time runs (`once.OnceInCluster`), Telegram's send rate shared (`pace.SharedPace`),
what `/status` reads of the queue (`look.JobsLook`) and the schema they need (`database`). (The
index's keyword search on PostgreSQL full text, measured against SQLite FTS5 and not used, is a
benchmark's: benchmarks/pg_keywords.py.) Opt-in with `BOT_STORE__URL=postgresql://…`; its
packages are the `mnemo[replicas]` extra, imported only here.

Fencing, for any write or request that must be one turn's alone (`lease`): a turn holds its
message as `(inbound id, fence)` (`mnemo_inbox.fence` moves on at each take and at each
give-away) under a lease (`mnemo_inbox.lease_until`) its replica renews; the stall sweep gives a
job away only once that lease ran out, moving the fence in the same transaction. A store that
must refuse a stale turn's write checks the token in the writing transaction
(`… WHERE id = %s AND fence = %s`, as `journal.PgJournal` does); a request that leaves the
process checks the lease at the wire (`bot.storage.inbox.looking_first(look, wire=…)`).
PostgreSQL ends a session idle in a transaction for the stall limit
(`database.session_options`), so no replica waits on a row or lock a stalled one holds.

database.py          The shared database
documents.py         `PgDocuments`: the workspace's documents (`bot.storage.files.Documents`) in
                     one table every replica shares, `mnemo_documents`
jobs.py              `FencedJobs`: procrastinate's job manager, whose end-of-job writes hold only
                     for the run that holds the job
journal.py           `PgJournal`: the journal (`bot.storage.inbox.Journal`) as rows every replica
                     shares
lease.py             A turn's hold on its chat's message, and the stall sweep that ends it
locks.py             `PgLocks`: per-path locks (`bot.storage.files.Locks`) every replica shares
look.py              `JobsLook`: what `/status` says about the chats' queue, read from
                     procrastinate's jobs table (the cluster's)
once.py              `OnceInCluster`: background work that one replica at a time runs (the daily
                     upkeep, the undo purge, reminders firing), however many replicas start it
pace.py              `SharedPace`: Telegram's send limits for a bot, shared by every replica
queue.py             `QueueIntake`: the chats' queue shared by every replica
                     (`bot.turn.intake.Intake`)
replica.py           This replica in the cluster: who it is (`Replica`), its connection to the
                     shared database (`Shared`), and every shared part above opened once
                     (`open_cluster`)
roster.py            `PgRoster`: the roster (`bot.storage.roster`: owners, paired users, pairing
                     requests, the claim code) in PostgreSQL, one row every replica shares
shared_documents.py  Which of the workspace's documents the replicas share, and `SplitDocuments`,
                     the `Documents` a replica's workspace has
stop.py              `/stop` across replicas
"""
