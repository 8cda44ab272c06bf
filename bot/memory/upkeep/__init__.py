"""Background upkeep of memory: consolidation of old messages into HISTORY and MEMORY.md (and,
with replicas, the jobs a replica left behind: `left`), archiving daily notes past their
retention, and item decay; each on its own schedule.

answers.py        Reading the consolidation model's JSON answer, however it arrives (three tiers)
archiving.py      Archiving old notes
consolidation.py  Consolidation: old messages become a `HISTORY.md` entry and `MEMORY.md` facts
decay.py          Item decay as a service
left.py           `LeftJobs`: with replicas, the consolidation jobs one replica kept and never ran
                  (it died, or stopped first) are run by another
requests.py       Consolidation's texts: the requests it sends (sized to the model's window), the
                  history entries it writes, and how a model's rewrite of MEMORY.md is read
schedule.py       Daily upkeep over every memory scope
"""
