"""The two places where a run reaches into botocore (boto3's engine), each for the span of a run.

* **Signing time.** AWS refuses a SigV4 signature made more than a few minutes away from its
  own clock, and botocore reads the signing time through one function,
  ``botocore.auth.get_current_datetime``. While the session freezes the wall clock, that name
  reads the real one, so a recording from AWS itself is accepted.
* **Credentials of a client built too early.** boto3 looks credentials up when a client is
  built. A client built at import, before a replay put its placeholder variables in place, has
  none and refuses to sign (``NoCredentialsError``) before its request could be answered from
  the cassette. While replaying, such a client signs with the placeholder credentials instead.
  A client that has credentials keeps them.

Neither changes what is stored or compared: the signing headers never take part in matching and
never reach a cassette. Both do nothing when botocore was not imported before the run.
"""

from __future__ import annotations

import contextlib
import datetime
import sys
from collections.abc import Callable, Iterator
from typing import Any


@contextlib.contextmanager
def real_signing_clock(real_now: Callable[[], datetime.datetime]) -> Iterator[None]:
    """botocore signs with ``real_now()`` (an aware UTC datetime) for the block."""
    auth = sys.modules.get("botocore.auth")
    current = getattr(auth, "get_current_datetime", None)
    if auth is None or current is None:
        yield
        return

    def signing_now(remove_tzinfo: bool = True) -> datetime.datetime:
        now = real_now()
        return now.replace(tzinfo=None) if remove_tzinfo else now

    setattr(auth, "get_current_datetime", signing_now)  # noqa: B010  (typed as a bare module)
    try:
        yield
    finally:
        setattr(auth, "get_current_datetime", current)  # noqa: B010


@contextlib.contextmanager
def placeholder_credentials(access_key: str, secret_key: str) -> Iterator[None]:
    """A botocore client with no credentials signs with these for the block."""
    signers = sys.modules.get("botocore.signers")
    credentials = sys.modules.get("botocore.credentials")
    signer = getattr(signers, "RequestSigner", None)
    original = getattr(signer, "get_auth_instance", None)
    make = getattr(credentials, "Credentials", None)
    if signer is None or original is None or make is None:
        yield
        return
    placeholder = make(access_key, secret_key, method="agui-replay-placeholder")

    def get_auth_instance(self: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("request_credentials") is None and self._credentials is None:
            kwargs["request_credentials"] = placeholder
        return original(self, *args, **kwargs)

    signer.get_auth_instance = get_auth_instance
    try:
        yield
    finally:
        signer.get_auth_instance = original
