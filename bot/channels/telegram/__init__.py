"""The Telegram channel: the only package that imports python-telegram-bot.

connect.py   the PTB `Bot` the app builds once (token, base URL, proxy, rate limiter);
             `check_token`
polling.py   `TelegramChannel`: start, our own long polling (journal first, then confirm),
             outages, shutdown
webhook.py   webhooks: the replica's web server Telegram posts each update to
budget.py    `AnswersFirst`: the rate limiter that lets answers on their way go first
errors.py    what Telegram's errors at start mean, in one line a person can act on
inbound.py   an update as an `Inbound`, attachments too (groups: what does not address the bot
             is chatter)
files.py     `TelegramFiles`: a message's file (getFile, download) for `bot.media`
replies.py   `TelegramReplier`: pieces, fallbacks (plain text, halves), `SendFailed`
buttons.py   a message's inline keyboard; a press (callback query) answered in place
drafts.py    a reply shown while it is written: sendMessageDraft, or a message edited
format.py    LLM markdown → text + entities, split under the limit
"""

import os

# Opt in to PTB 23's `RetryAfter.retry_after` as a timedelta (AIORateLimiter reads it either way);
# without this every 429 raises a PTBDeprecationWarning. Set before PTB is imported below.
os.environ.setdefault("PTB_TIMEDELTA", "true")

from bot.channels.telegram.connect import check_token, telegram_bot
from bot.channels.telegram.inbound import CHANNEL, to_inbound
from bot.channels.telegram.polling import Showing, TelegramChannel

__all__ = ["CHANNEL", "Showing", "TelegramChannel", "check_token", "telegram_bot", "to_inbound"]
