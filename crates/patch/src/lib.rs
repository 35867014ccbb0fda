//! The three PATCH bodies of the Kubernetes API (server-side apply is `kuorum-fieldmanager`).
