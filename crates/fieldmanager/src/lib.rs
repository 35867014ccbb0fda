//! managedFields: who owns which field of an object, server-side apply and its conflicts.
