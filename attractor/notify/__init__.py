"""Webhook notifications of a run: an observer of its events, delivered off the run's path.

:class:`~attractor.notify.notifier.Notifier` watches a run's events (as the
terminal display does), turns the ones the user picked (``notify_on``) into a
payload (:mod:`attractor.notify.payload`: the documented JSON, or a Slack
message) and POSTs it (:mod:`attractor.notify.deliver`: signed with
HMAC-SHA256 when a secret is named, retried with back-off, each attempt
bounded). A delivery never blocks or fails the run: one that does not go
through is a warning and a line in the run directory's ``notifications.jsonl``.
"""
