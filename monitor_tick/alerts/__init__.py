"""Alerts: the policy (pure: messages, storms, retries, our own lost network) and the sending
(Apprise, through the deliveries outbox in the database)."""
