"""What came with a message, read before the turn: the owner of turning an `Inbound`'s
attachments into the text (and images) the turn reads.

reader.py      `MediaReader`: one `KindReader` (the protocol each kind's module implements)
               per attachment kind
reading.py     `Reading` (text, images, a document's text for this turn); `Unreadable`
files.py       `Fetcher` (the channel's way to a file's bytes), `MessageFiles`: fetched within
               the size limit and kept in the workspace (`memory/…/files/`)
voice.py       voice notes and audio: transcribed (`Transcriber`), `[voice] …`
photo.py       photos: an image part for a model that sees images, `[photo: caption]`
document.py    documents: text files and PDFs into the turn, bounded, their text kept beside
               them (indexed in the chat's scope); an image sent as a file is a photo
extraction.py  which files are text, PDF or an image; their text (pypdf for PDFs)
other.py       anything else (a sticker, a location …): what is supported, in one line

The channels supply a `Fetcher` (Telegram: getFile and a download; the console: a local path).
"""
