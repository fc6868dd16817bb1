//! Helpers for the end-to-end tests: locating the real binary, starting it on a temp folder and a
//! free port, and reading state through its HTTP API.
