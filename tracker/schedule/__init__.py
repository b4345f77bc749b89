"""When repos are checked and by whom: workers, leases, the ticker, events, the inbox, metrics."""
