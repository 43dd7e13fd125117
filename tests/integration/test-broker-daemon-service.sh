#!/usr/bin/env bash
# Placeholder: being written.
exit 0
