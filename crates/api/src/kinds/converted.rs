//! Owns what every version of a kind that is stored as another version has in common: it
//! is one [`Strategy`] ([`ServedAs`]) that converts to the stored kind and lets that kind
//! default, prepare, validate and print, as kube-apiserver does everything on its internal
//! version. What differs per version (the conversion both ways, the version's own
//! defaults, field labels and extra rules) is the few functions each such file gives.

use serde_json::Value;

use crate::kinds::printing::{Column, Row};
use crate::kinds::{Object, Strategy};
use crate::registry::ResourceDef;
use crate::validation::{FieldError, NameRule};
use crate::ApiError;

/// A version of a kind served by converting to and from `stored`.
pub struct ServedAs {
    pub def: &'static ResourceDef,
    /// The kind objects are stored as.
    pub stored: &'static dyn Strategy,
    /// This version's form to the stored one (type meta aside).
    pub to_stored: fn(&mut Object),
    /// The stored form to this version's (type meta aside).
    pub from_stored: fn(&mut Object),
    /// This version's own defaults (kube's `SetDefaults_*` of the version).
    pub defaults: fn(&mut Object),
    /// Rules that hold for writes through this version only, on the stored form (e.g.
    /// events.k8s.io's strict event rules); the stored kind's validation always runs.
    pub validate: fn(&Object, Option<&Object>) -> Vec<FieldError>,
    /// The field labels a field selector may name through this version.
    pub selectable_fields: &'static [&'static str],
    /// Where the stored objects keep each field label that reads elsewhere.
    pub field_paths: &'static [(&'static str, &'static str)],
}

impl ServedAs {
    /// `obj` in the stored form: converted unless it is already.
    fn stored_form(&self, obj: &Object) -> Object {
        let mut out = obj.clone();
        if !self.is_stored_form(obj) {
            (self.to_stored)(&mut out);
        }
        out
    }

    /// Whether `obj` carries the stored kind's apiVersion (a stored object read back, as
    /// Tables print them).
    fn is_stored_form(&self, obj: &Object) -> bool {
        obj.get("apiVersion").and_then(Value::as_str) == Some(self.stored.def().api_version().as_str())
    }

    /// Runs `f` on the stored form of `obj` and converts the result back.
    fn through_stored(&self, obj: &mut Object, f: impl FnOnce(&mut Object)) {
        let mut stored = self.stored_form(obj);
        f(&mut stored);
        (self.from_stored)(&mut stored);
        *obj = stored;
    }
}

impl Strategy for ServedAs {
    fn def(&self) -> &'static ResourceDef {
        self.def
    }

    fn name_rule(&self) -> NameRule {
        self.stored.name_rule()
    }

    fn defaults(&self, obj: &mut Object) {
        (self.defaults)(obj)
    }

    fn prepare_for_create(&self, obj: &mut Object, now: &str) {
        self.through_stored(obj, |o| self.stored.prepare_for_create(o, now));
    }

    fn prepare_for_update(&self, obj: &mut Object) {
        self.through_stored(obj, |o| self.stored.prepare_for_update(o));
    }

    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let obj = self.stored_form(obj);
        let old = old.map(|o| self.stored_form(o));
        let mut errs = self.stored.validate(&obj, old.as_ref());
        errs.extend((self.validate)(&obj, old.as_ref()));
        errs
    }

    fn selectable_fields(&self) -> &'static [&'static str] {
        self.selectable_fields
    }

    fn field_path(&self, label: &str) -> Option<&'static str> {
        self.field_paths.iter().find(|(l, _)| *l == label).map(|(_, p)| *p)
    }

    fn columns(&self) -> &'static [Column] {
        self.stored.columns()
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        match obj.as_object() {
            Some(o) => self.stored.row(&Value::Object(self.stored_form(o)), now),
            None => self.stored.row(obj, now),
        }
    }

    fn check_delete(&self, name: &str) -> Result<(), ApiError> {
        self.stored.check_delete(name)
    }

    fn stored_as(&self) -> Option<&'static dyn Strategy> {
        Some(self.stored)
    }

    fn to_stored(&self, obj: &mut Object) {
        (self.to_stored)(obj);
        // What reading the stored version back would default (kube defaults a stored
        // object as it decodes it).
        self.stored.defaults(obj);
    }

    fn from_stored(&self, obj: &mut Object) {
        (self.from_stored)(obj)
    }
}
