"""What `searchlake research` sends a running `searchlake serve` to hand its
run over (POST /api/research): the research request itself, and the
fingerprint of the settings it was made with. The server validates the body
against this model and nothing else: a field it does not know is refused,
not ignored."""

from __future__ import annotations

from pydantic import ValidationError

from schemas.request import ResearchRequest


class HandoffRequest(ResearchRequest):
    # the server runs the request only with the same settings as the command (tasks/server/handoff.py)
    fingerprint: str

    def request(self) -> ResearchRequest:
        return ResearchRequest(**self.model_dump(exclude={"fingerprint"}))


def is_malformed(exc: ValidationError) -> bool:
    """The body could not be read as JSON at all (rather than read, and found wrong)."""
    return exc.errors()[0]["type"] == "json_invalid"
