//! Owns the `/openapi/v3` documents: the index and one OpenAPI 3.0 document per
//! group-version, built from the registry and the built-in definitions.
