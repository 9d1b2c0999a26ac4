"""Signed, expiring log URLs on the log host, like GitHub's pre-signed blob links.

The signature covers the path and the expiry, so a URL can be neither edited nor extended;
it is valid for one minute, as GitHub documents for the logs redirect.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import parse_qs, quote

URL_LIFETIME = 60.0
_PATH = re.compile(r"^/(?P<tag>[A-Za-z0-9]+)/_apis/pipelines/1/jobs/(?P<job>\d+)/signedlogcontent$")


@dataclass(frozen=True)
class Verdict:
    job_id: int | None  # None: refused, see `reason`
    reason: str = ""


class LogLinks:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._key = secrets.token_bytes(32)
        self._tag = secrets.token_hex(12)
        self._clock = clock
        self.base_url = ""  # set once the log host listens

    def url_for(self, job_id: int) -> str:
        path = f"/{self._tag}/_apis/pipelines/1/jobs/{job_id}/signedlogcontent"
        expires = dt.datetime.fromtimestamp(self._clock() + URL_LIFETIME, dt.UTC)
        stamp = expires.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        signature = quote(self._sign(path, stamp), safe="")
        query = f"urlExpires={quote(stamp)}&urlSigningMethod=HMACV1&urlSignature={signature}"
        return f"{self.base_url}{path}?{query}"

    def verify(self, path: str, raw_query: str) -> Verdict:
        match = _PATH.match(path)
        query = {k: v[-1] for k, v in parse_qs(raw_query).items()}
        stamp, signature = query.get("urlExpires", ""), query.get("urlSignature", "")
        if not match or match["tag"] != self._tag or not stamp or not signature:
            return Verdict(None, "malformed signed URL")
        if not hmac.compare_digest(signature, self._sign(path, stamp)):
            return Verdict(None, "signature mismatch")
        expires = dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
        if expires.timestamp() < self._clock():
            return Verdict(None, "signed URL expired")
        return Verdict(int(match["job"]))

    def _sign(self, path: str, stamp: str) -> str:
        digest = hmac.new(self._key, f"{path}\n{stamp}".encode(), hashlib.sha256).digest()
        return base64.b64encode(digest).decode()
