"""The memory page: a web page the bot serves itself, where a person sees, searches, edits and
undoes their memory, sees their reminders and what the model cost (docs/web.md).

The stack: aiohttp's server with Jinja2 templates, rendered on the server (no Node.js, no build
step; one small script, `static/page.js`, only asks before a Forget). aiohttp because the bot
already carries it (replicated mode's webhooks, the tests' fakes): one HTTP stack, not two, and
its `AppRunner` runs inside the bot's own event loop without taking its signals, so a page calls
the very objects the chat commands call. Jinja2 for autoescaping: whatever a fact, a file name
or a message holds is text on the page, never markup.

Off unless `web.enabled`; on `127.0.0.1:8765` unless `web.host`/`web.port` say otherwise, and
beyond loopback only with `web.public_url` (a reverse proxy's HTTPS address). Embedded mode only
for now (`Settings` refuses it with `store.url`).

    signin.py   one-time links and browser sessions, hashed at rest (`state/web.json`)
    viewer.py   who a page is for and what they may see (the rule: `bot.memory.scopes`)
    guard.py    every request: CSP and headers, the Host, the session, same-origin writes
    site.py     rendering (autoescaped templates), notices after a write
    server.py   the aiohttp server, a service of the app; signing in and out
    command.py  `/web`: a link in the person's private chat
    chart.py    the usage chart as an inline SVG's numbers
    checks.py   what Health runs: doctor's checks, as the command line hands them over
    pages/      one module per page

Nothing is imported here: `bot.app` and the command line import `command` and `signin` at
start, the server and its pages (aiohttp, Jinja2) only when the page is on.
"""
