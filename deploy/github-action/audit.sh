#!/usr/bin/env bash
# The action's audit step: runs `neurarch-trace audit` on the checkout's lock file and sources.
# Inputs arrive as AUDIT_* environment variables (never spliced into the command line), so a
# hostile input value cannot inject shell. Exits with audit's own code: 1 fails the job when a
# finding reaches AUDIT_MIN_SEVERITY; the SARIF file is written either way.
set -euo pipefail

args=(audit --server "${AUDIT_SERVER:?the server input is required}"
      --format sarif --output "${AUDIT_SARIF_FILE:-neurarch-trace.sarif}"
      --min-severity "${AUDIT_MIN_SEVERITY:-moderate}" --root .)
if [ -n "${AUDIT_LOCK_FILE:-}" ] && [ -f "${AUDIT_LOCK_FILE}" ]; then
    args+=(--lock "${AUDIT_LOCK_FILE}")
fi
if [ -n "${AUDIT_SCAN_SRC:-}" ]; then
    args+=(--scan-src "${AUDIT_SCAN_SRC}")
fi
exec neurarch-trace "${args[@]}"
