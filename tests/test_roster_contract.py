"""The roster's contract, for both: `RosterFile` (`state/paired.json`, one host) and `PgRoster`
(every replica; skipped without `MNEMO_TEST_PG`). Two stores stand for two processes: each its
own instance (and, for PostgreSQL, its own pool). Then, on PostgreSQL: the claim code is one for
the cluster and `/claim` works on any replica; `python -m bot pair` works on the database."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import SecretStr

from bot.cli.doctor import check_owners
from bot.errors import StorageError
from bot.settings import Settings, StoreSettings, TelegramSettings
from bot.storage.files import FileLocks
from bot.storage.roster import Member, Roster, RosterFile, RosterStore
from bot.turn.access import AccessPolicy
from bot.turn.door import CLAIMED, OWNED, Door
from bot.turn.pairing import Pairing, grouped
from tests.harness import OWNER, REPO, STRANGER, run_bot_command
from tests.pg import pg_database
from tests.talk import message

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
WITHIN = 10.0  # seconds another process is given to see a change


@dataclass
class Two:
    stores: list[RosterStore]
    damage: Callable[[], Awaitable[None]]  # make the stored roster unreadable


@pytest.fixture(params=["files", "postgresql"])
async def two(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Two]:
    if request.param == "files":
        path = tmp_path / "state" / "paired.json"
        path.parent.mkdir()

        async def damage_file() -> None:
            path.write_text('{"version": 1, "paired": [{"id": ')

        locks = [FileLocks(tmp_path / "locks"), FileLocks(tmp_path / "locks")]
        yield Two([RosterFile(path, lock) for lock in locks], damage_file)
        return
    from bot.replicas.database import open_pool
    from bot.replicas.roster import PgRoster

    async with pg_database() as url:
        pools = [open_pool(url), open_pool(url)]
        stores = [PgRoster(pool) for pool in pools]
        for pool, store in zip(pools, stores, strict=True):
            await pool.open()
            await store.start()

        async def damage_row() -> None:
            async with pools[0].connection() as conn:
                await conn.execute(
                    'INSERT INTO mnemo_roster VALUES (1, \'{"version": 1, "paired"\', 9) '
                    "ON CONFLICT (id) DO UPDATE SET body = excluded.body, version = 9"
                )
                await conn.execute("NOTIFY mnemo_roster")  # as a change by hand, announced

        try:
            yield Two(list(stores), damage_row)
        finally:
            for pool, store in zip(pools, stores, strict=True):
                await store.stop()
                await pool.close()


async def seen(store: RosterStore, check: Callable[[Roster], bool]) -> Roster:
    """The store's roster once `check` holds (another process's change may take a moment)."""
    for _ in range(int(WITHIN / 0.05)):
        if check(store.current()):
            return store.current()
        await asyncio.sleep(0.05)
    raise TimeoutError(f"not seen within {WITHIN} s: {store.current()}")


def pair(user_id: int) -> Callable[[Roster], tuple[Roster, None]]:
    def edit(roster: Roster) -> tuple[Roster, None]:
        member = Member(user_id, f"user {user_id}", NOW)
        return replace(roster, paired=(*roster.paired, member)), None

    return edit


async def test_a_change_by_one_process_is_seen_by_the_other(two: Two) -> None:
    first, second = two.stores
    await first.change(pair(3003))

    found = await seen(second, lambda r: 3003 in r.paired_ids)

    assert found.paired[0] == Member(3003, "user 3003", NOW)
    assert first.current() == found


async def test_changes_from_both_at_once_are_all_kept(two: Two) -> None:
    first, second = two.stores
    ids = range(5000, 5020)

    await asyncio.gather(*((first if i % 2 else second).change(pair(i)) for i in ids))

    for store in two.stores:
        found = await seen(store, lambda r: len(r.paired) >= len(ids))
        assert sorted(found.paired_ids) == list(ids)


async def test_an_edit_that_changes_nothing_answers_and_writes_nothing(two: Two) -> None:
    first, second = two.stores
    await first.change(pair(3003))
    before = await seen(second, lambda r: bool(r.paired))

    answer = await second.change(lambda roster: (roster, len(roster.paired)))

    assert answer == 1 and second.current() == before


async def test_the_claim_code_is_one_for_both_and_kept_until_used(two: Two) -> None:
    first, second = two.stores
    pairings = [Pairing(store, now=lambda: NOW) for store in two.stores]

    code = await pairings[0].claim_code()
    again = await pairings[1].claim_code()
    claimed = await pairings[1].claim(user_id=OWNER, name="ann")
    late = await pairings[0].claim(user_id=STRANGER, name="eve")

    assert again == code and claimed and not late
    owned = await seen(first, lambda r: bool(r.owners))
    assert owned.owner_ids == {OWNER} and owned.claim_code is None
    assert second.current().claim_code is None


async def test_a_damaged_roster_reads_as_empty_and_is_never_overwritten(two: Two) -> None:
    first, second = two.stores
    await first.change(pair(3003))
    await seen(second, lambda r: bool(r.paired))
    await two.damage()

    with pytest.raises(StorageError, match="cannot be read"):
        await second.change(pair(4004))
    emptied = await seen(first, lambda r: not r.paired)  # the PostgreSQL one: at a refresh

    assert emptied == Roster()


# ----------------------------------------------------------------------------- PostgreSQL only


def shell_settings(url: str, tmp_path: Path) -> Settings:
    """A command's settings on a machine of its own: no owner configured, the database's URL."""
    return Settings(
        _env_file=None,  # type: ignore[call-arg]
        workspace=tmp_path / "elsewhere",
        telegram=TelegramSettings(owner_ids=()),
        store=StoreSettings(url=SecretStr(url)),
    )


async def test_claim_works_on_another_replica_than_the_one_that_made_the_code(
    pg_url: str, tmp_path: Path
) -> None:
    from bot.replicas.database import open_pool
    from bot.replicas.roster import PgRoster

    pools = [open_pool(pg_url), open_pool(pg_url)]
    rosters = [PgRoster(pool) for pool in pools]
    doors: list[Door] = []
    for pool, roster in zip(pools, rosters, strict=True):
        await pool.open()
        await roster.start()
        access = AccessPolicy(owner_ids=(), allowed_user_ids=(), roster=roster)
        doors.append(Door(access, Pairing(roster, now=lambda: NOW), now=lambda: NOW))
    try:
        for door in doors:
            await door.start()
        code = doors[0].claim_code
        assert code is not None and doors[1].claim_code == code  # one code, logged by both

        [claimed] = await doors[1].answer(message(f"/claim {grouped(code)}", at=NOW, user=OWNER))
        await seen(rosters[0], lambda r: bool(r.owners))
        [late] = await doors[0].answer(message(f"/claim {code}", at=NOW, user=STRANGER))

        doctor = await check_owners(shell_settings(pg_url, tmp_path))

        assert claimed.text == CLAIMED.format(user_id=OWNER)
        assert late.text == OWNED
        assert doors[0].access.is_owner(OWNER) and not doors[0].access.allows(STRANGER)
        assert (doctor.level, doctor.text) == ("ok", f"{OWNER} (claimed)")
    finally:
        for pool, roster in zip(pools, rosters, strict=True):
            await roster.stop()
            await pool.close()


async def test_pair_list_and_approve_from_a_shell_work_on_the_database(
    pg_url: str, tmp_path: Path
) -> None:
    from bot.replicas.database import open_pool
    from bot.replicas.roster import PgRoster

    pool = open_pool(pg_url)
    await pool.open()
    roster = PgRoster(pool)
    await roster.start()
    try:
        request = await Pairing(roster, now=lambda: datetime.now(UTC)).ask(
            user_id=STRANGER, chat_id=STRANGER, name="bob"
        )
        code = grouped(request[1].code)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp_path),
            "PYTHONPATH": str(REPO),
            "BOT_CONFIG_FILE": str(REPO / "config" / "settings.toml"),
            "BOT_WORKSPACE": str(tmp_path / "workspace"),  # a replica's own: empty
            "BOT_TELEGRAM__OWNER_IDS": f"[{OWNER}]",
            "BOT_STORE__URL": pg_url,
        }

        listed = await run_bot_command(env, tmp_path, "pair", "list", within=30)
        approved = await run_bot_command(env, tmp_path, "pair", "approve", code, within=30)
        found = await seen(roster, lambda r: bool(r.paired))

        assert listed[0] == 0 and f"/pair {code}" in listed[1], listed[1]
        assert approved[0] == 0 and f"(id {STRANGER}) can talk to me now" in approved[1]
        assert found.paired_ids == {STRANGER} and found.pending == ()
        assert not (tmp_path / "workspace" / "state" / "paired.json").exists()
        assert pg_url not in listed[1] + approved[1]
    finally:
        await roster.stop()
        await pool.close()
