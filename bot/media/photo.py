"""Photos: kept, and shown to a model that reads images as an image part of this turn's message
(`TurnContext.images`), the message read as `[photo: <caption>]` (which the session and the daily
note keep, without the image: later turns stay cheap). A model that does not read images: one
line, the photo kept."""

from __future__ import annotations

from dataclasses import dataclass

from bot.media.files import MessageFiles
from bot.media.reading import Reading, Unreadable
from bot.models import Attachment, Image, Inbound

UNSEEN = (
    "The model I use ({model}) doesn't read images, so I can't see photos. I kept it as {name}. "
    "If the model does read images, set BOT_MEDIA__VISION=true."
)


@dataclass(eq=False, kw_only=True)
class PhotoReader:
    sees_images: bool
    model: str

    async def read(self, inbound: Inbound, attachment: Attachment, files: MessageFiles) -> Reading:
        kept = await files.keep(attachment)
        if not self.sees_images:
            raise Unreadable(UNSEEN.format(model=self.model, name=kept.name))
        image = Image(kept.mime_type or "image/jpeg", kept.data)
        return Reading(label(inbound.text), images=(image,))


def label(caption: str) -> str:
    """How the session and the notes mark a photo."""
    caption = " ".join(caption.split())
    return f"[photo: {caption}]" if caption else "[photo]"
