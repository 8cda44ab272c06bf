"""Small PDFs made in tests: pages of text (a hand-written PDF with a Helvetica text layer),
pages without text (a scan), one with a password, and bytes that are no PDF at all."""

from __future__ import annotations

import io

from pypdf import PdfReader, PdfWriter


def text_pdf(*pages: str) -> bytes:
    """A PDF of one page per string, each line of it a line of text on that page."""
    count = len(pages)
    kids = " ".join(f"{3 + 2 * n} 0 R" for n in range(count))
    objects = [
        "<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {count} >>",
    ]
    font = 3 + 2 * count
    for n, text in enumerate(pages):
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {4 + 2 * n} 0 R "
            f"/Resources << /Font << /F1 {font} 0 R >> >> >>"
        )
        objects.append(_stream(_content(text)))
    objects.append("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return _document(objects)


def scanned_pdf(pages: int = 2) -> bytes:
    """Pages with nothing but (what would be) pictures: no text layer."""
    writer = PdfWriter()
    for _ in range(pages):
        writer.add_blank_page(width=612, height=792)
    return _written(writer)


def locked_pdf(text: str, password: str = "s3cret") -> bytes:
    """A PDF of `text` that opens only with `password`."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(text_pdf(text))))
    writer.encrypt(user_password=password, owner_password=password, algorithm="RC4-128")
    return _written(writer)


def _content(text: str) -> str:
    lines = [
        line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
        for line in text.split("\n")
    ]
    shown = " T* ".join(f"({line}) Tj" for line in lines)
    return f"BT /F1 11 Tf 14 TL 72 720 Td {shown} ET"


def _stream(content: str) -> str:
    data = content.encode("latin-1")
    return f"<< /Length {len(data)} >>\nstream\n{content}\nendstream"


def _document(objects: list[str]) -> bytes:
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    trailer = f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n"
    return bytes(out + trailer.encode())


def _written(writer: PdfWriter) -> bytes:
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()
