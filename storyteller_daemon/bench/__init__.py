"""Benchmarks of the daemon on this machine: the pipeline, the CLI's start-up, reference search,
the dashboard's pages, bad tool-call arguments and a labelled world stream.

``storyteller bench …`` parses options and calls these; the stand-in model and fakes they need
come from `storyteller_daemon.testing` where it has them.
"""
