//! The three PATCH bodies of the Kubernetes API (server-side apply is `kuorum-fieldmanager`).
//!
//! - [`json_patch()`]: RFC 6902 JSON Patch (`application/json-patch+json`).
//! - [`merge_patch`]: RFC 7386 JSON Merge Patch (`application/merge-patch+json`).
//! - [`strategic_merge_patch`]: Kubernetes' strategic merge patch
//!   (`application/strategic-merge-patch+json`), driven by the `x-kubernetes-patch-strategy`
//!   and `x-kubernetes-patch-merge-key` metadata of a [`kuorum_schema::Schema`].
//!
//! Each takes the current object as JSON and the raw request body and returns the patched
//! object, or a [`PatchError`] whose variant says which HTTP status kube-apiserver answers.
//! What applying a patch may cost is bounded by [`limits`]: no patch makes a document
//! deeper than [`limits::MAX_DEPTH`], and a JSON Patch's operations and the bytes its
//! copies add are capped as kube-apiserver caps them. Merge and strategic merge patches
//! cost time linear in the object and the patch (lists merge through hash maps), and their
//! result is no larger than the two together.
//! Checking that the result is a valid object of its kind is the caller's job, as it is in
//! kube-apiserver (which decodes and validates after patching).

mod json;
pub mod limits;
mod merge;
mod strategic;

pub use json::json_patch;
pub use merge::merge_patch;
pub use strategic::strategic_merge_patch;

/// The patch body formats, by the media type of the request's `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PatchType {
    /// `application/json-patch+json`
    Json,
    /// `application/merge-patch+json`
    Merge,
    /// `application/strategic-merge-patch+json`
    Strategic,
}

impl PatchType {
    /// The patch type of a `Content-Type` value: parameters after `;` are ignored, and so is
    /// case (media types are case-insensitive). `None` for anything else (415 upstream).
    pub fn from_content_type(media_type: &str) -> Option<PatchType> {
        let essence = media_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        match essence.as_str() {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            _ => None,
        }
    }

    /// The media type naming this patch type.
    pub fn media_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::Strategic => "application/strategic-merge-patch+json",
        }
    }
}

/// Why a patch could not be applied. The variant is the HTTP status kube-apiserver answers
/// (`staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go`).
#[derive(Debug, Clone, PartialEq)]
pub enum PatchError {
    /// 400 Bad Request: the body is not a patch of its type. kube-apiserver answers 400 for
    /// a body that does not decode (not JSON; a JSON Patch that is not an array of objects;
    /// a merge patch that is `null` or a bare scalar; a strategic patch that is not an
    /// object), and for the strategic merge patch errors it classes as format errors
    /// (`interpretStrategicMergePatchError`: bad `$deleteFromPrimitiveList`, `$retainKeys`
    /// or `$setElementOrder` directives). A patch field missing from its map's `$retainKeys`
    /// is one of these: the library reports it as `ErrBadPatchFormatForRetainKeys`, never
    /// as the `ErrPatchContentNotMatchRetainKeys` that kube-apiserver would map to 422.
    ///
    /// The other strategic merge patch errors (an unknown `$patch` value, `$patch: merge`
    /// in a list, a list element without its merge key, a `$setElementOrder` list out of
    /// step with the patch list, mixed element types) are plain Go errors there, which
    /// kube-apiserver turns into 500 InternalError with reason Unknown. They are the
    /// client's mistake, not the server's, so kuorum answers them 400 like the other
    /// malformed directives.
    BadRequest(String),
    /// 422 Unprocessable Entity: a well-formed patch that cannot be applied to this object.
    /// kube-apiserver answers 422 (`StatusReasonInvalid`, the library's message) when a JSON
    /// Patch operation fails (a missing path, a failed `test`, an unknown `op`, an operation
    /// without its `path` or `value`), when a merge patch's result is not an object (an
    /// array body), and for the strategic error `lists of lists are not supported`.
    /// So are the bounds of [`limits`]: `copy` operations adding more than
    /// [`limits::MAX_COPY_BYTES`] (evanphx/json-patch's `AccumulatedCopySizeError`), and a
    /// result nested deeper than [`limits::MAX_DEPTH`] (kube-apiserver: a patched object
    /// that does not decode).
    Invalid(String),
    /// 413 Request Entity Too Large: a JSON Patch with more operations than
    /// [`limits::MAX_JSON_PATCH_OPERATIONS`], as kube-apiserver answers it.
    TooLarge(String),
}

impl PatchError {
    /// The message, whichever the status.
    pub fn message(&self) -> &str {
        match self {
            PatchError::BadRequest(m) | PatchError::Invalid(m) | PatchError::TooLarge(m) => m,
        }
    }
}

impl std::fmt::Display for PatchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for PatchError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_types() {
        let cases: &[(&str, Option<PatchType>)] = &[
            ("application/json-patch+json", Some(PatchType::Json)),
            ("application/merge-patch+json", Some(PatchType::Merge)),
            ("application/strategic-merge-patch+json", Some(PatchType::Strategic)),
            ("application/merge-patch+json; charset=utf-8", Some(PatchType::Merge)),
            ("Application/JSON-Patch+JSON", Some(PatchType::Json)),
            (" application/strategic-merge-patch+json ;x=y", Some(PatchType::Strategic)),
            ("application/apply-patch+yaml", None),
            ("application/json", None),
            ("", None),
        ];
        for (ct, want) in cases {
            assert_eq!(PatchType::from_content_type(ct), *want, "{ct:?}");
        }
        for pt in [PatchType::Json, PatchType::Merge, PatchType::Strategic] {
            assert_eq!(PatchType::from_content_type(pt.media_type()), Some(pt));
        }
    }
}
