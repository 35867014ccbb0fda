//! CronJob (batch/v1): tracks generation; status subresource; created with an empty
//! status; a required schedule in cron's standard five-field form (or a `@` descriptor),
//! without `TZ=` (the `timeZone` field says it); defaults for concurrency, suspension and
//! history limits; a job template whose selector is left to be generated; names of at most
//! 52 characters (its jobs add 11); printed with schedule, time zone, suspension, active
//! jobs and last schedule.

use serde_json::{json, Value};

use super::job::{job_spec, JOB_SELECTOR_DOC};
use crate::kinds::apps::workload::selector_cell;
use crate::kinds::common::{self, at, non_negative, one_of};
use crate::kinds::core::pod::pod_spec_defaults;
use crate::kinds::printing::*;
use crate::kinds::{child, set_default, Object, Strategy};
use crate::registry::{ResourceDef, Scope, ALL_VERBS, STATUS};
use crate::validation::{BadValue, FieldError};

pub static DEF: ResourceDef = ResourceDef {
    group: "batch",
    version: "v1",
    kind: "CronJob",
    plural: "cronjobs",
    singular: "cronjob",
    scope: Scope::Namespaced,
    verbs: ALL_VERBS,
    short_names: &["cj"],
    categories: &["all"],
    subresources: &[STATUS],
    list_kind: "CronJobList",
    tracks_generation: true,
};

/// A job of a CronJob is named `<cronjob>-<11 characters>` and must fit in 63.
const MAX_NAME_LENGTH: usize = 63 - 11;

const CRONJOB_COLUMNS: &[Column] = &[
    NAME,
    col("Schedule", "string", "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron."),
    col(
        "Timezone",
        "string",
        "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones. \
         If not specified, this will default to the time zone of the kube-controller-manager process. The set of \
         valid time zone names and the time zone offset is loaded from the system-wide time zone database by the API \
         server during CronJob validation and the controller manager during execution. If no system-wide time zone \
         database can be found a bundled version of the database is used instead. If the time zone name becomes \
         invalid during the lifetime of a CronJob or due to a change in host configuration, the controller will stop \
         creating new new Jobs and will create a system event with the reason UnknownTimeZone. More information can \
         be found in https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/#time-zones",
    ),
    col(
        "Suspend",
        "boolean",
        "This flag tells the controller to suspend subsequent executions, it does not apply to already started \
         executions.  Defaults to false.",
    ),
    col("Active", "integer", "A list of pointers to currently running jobs."),
    col("Last Schedule", "string", "Information when was the last time the job was successfully scheduled."),
    AGE,
    wide("Containers", "string", CONTAINERS_DOC),
    wide("Images", "string", IMAGES_DOC),
    wide("Selector", "string", JOB_SELECTOR_DOC),
];

pub struct CronJob;

impl Strategy for CronJob {
    fn def(&self) -> &'static ResourceDef {
        &DEF
    }

    /// kube's `SetDefaults_CronJob` and the template's pod spec defaults (a job template
    /// gets no Job defaults).
    fn defaults(&self, obj: &mut Object) {
        let Some(spec) = child(obj, "spec") else { return };
        set_default(spec, "concurrencyPolicy", json!("Allow"));
        set_default(spec, "suspend", json!(false));
        set_default(spec, "successfulJobsHistoryLimit", json!(3));
        set_default(spec, "failedJobsHistoryLimit", json!(1));
        let pod = child(spec, "jobTemplate").and_then(|t| child(t, "spec")).and_then(|s| child(s, "template"));
        if let Some(pod) = pod.and_then(|t| child(t, "spec")) {
            pod_spec_defaults(pod);
        }
    }

    fn prepare_for_create(&self, obj: &mut Object, _now: &str) {
        obj.insert("status".into(), json!({}));
    }

    /// kube's `validateCronJobSpec`, and on create the name's length.
    fn validate(&self, obj: &Object, old: Option<&Object>) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let schedule = common::str_at(obj, "spec.schedule");
        if schedule.is_empty() {
            errs.push(FieldError::required("spec.schedule", ""));
        } else {
            // A TZ prefix persisted before it was refused may stay.
            let tz_allowed = old.is_some_and(|o| common::str_at(o, "spec.schedule").contains("TZ"));
            if let Err(msg) = parse_schedule(schedule) {
                errs.push(FieldError::invalid("spec.schedule", schedule, msg));
            }
            if schedule.contains("TZ") {
                if !tz_allowed {
                    errs.push(FieldError::invalid(
                        "spec.schedule",
                        schedule,
                        "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                    ));
                } else if at(obj, "spec.timeZone").is_some() {
                    errs.push(FieldError::invalid(
                        "spec.schedule",
                        schedule,
                        "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                    ));
                }
            }
        }
        non_negative(obj, "spec.startingDeadlineSeconds", &mut errs);
        if old.is_none_or(|o| at(o, "spec.timeZone") != at(obj, "spec.timeZone")) {
            time_zone(obj, &mut errs);
        }
        match common::str_at(obj, "spec.concurrencyPolicy") {
            "" => errs.push(FieldError::required("spec.concurrencyPolicy", "")),
            _ => one_of(obj, "spec.concurrencyPolicy", &["Allow", "Forbid", "Replace"], &mut errs),
        }
        job_spec(obj, "spec.jobTemplate.spec", &mut errs);
        if let Some(selector) = at(obj, "spec.jobTemplate.spec.selector") {
            errs.push(FieldError::invalid_value(
                "spec.jobTemplate.spec.selector",
                BadValue::of_json(selector),
                "`selector` will be auto-generated",
            ));
        }
        if at(obj, "spec.jobTemplate.spec.manualSelector").and_then(Value::as_bool) == Some(true) {
            errs.push(FieldError::not_supported_value(
                "spec.jobTemplate.spec.manualSelector",
                BadValue::Raw("true".into()),
                &["nil", "false"],
            ));
        }
        non_negative(obj, "spec.successfulJobsHistoryLimit", &mut errs);
        non_negative(obj, "spec.failedJobsHistoryLimit", &mut errs);
        let name = common::str_at(obj, "metadata.name");
        if old.is_none() && name.len() > MAX_NAME_LENGTH {
            errs.push(FieldError::invalid("metadata.name", name, "must be no more than 52 characters"));
        }
        errs
    }

    fn columns(&self) -> &'static [Column] {
        CRONJOB_COLUMNS
    }

    fn row(&self, obj: &Value, now: i64) -> Row {
        let last_schedule = match obj.pointer("/status/lastScheduleTime").filter(|t| !t.is_null()) {
            Some(t) => since(t.as_str().unwrap_or(""), now),
            None => "<none>".into(),
        };
        let suspend = match obj.pointer("/spec/suspend").and_then(Value::as_bool) {
            Some(true) => "True",
            Some(false) => "False",
            None => "<unset>",
        };
        let job_spec = obj.pointer("/spec/jobTemplate/spec").unwrap_or(&Value::Null);
        let (containers, images) = container_cells(arr_at(job_spec, "/template/spec/containers"));
        Row::plain(vec![
            name(obj).into(),
            str_at(obj, "/spec/schedule").into(),
            non_empty(str_at(obj, "/spec/timeZone")).unwrap_or("<none>").into(),
            suspend.into(),
            arr_at(obj, "/status/active").len().into(),
            last_schedule.into(),
            age(obj, now).into(),
            containers.into(),
            images.into(),
            selector_cell(job_spec.get("selector")).into(),
        ])
    }
}

/// kube's `validateTimeZone` without the time zone database: each part of the name made
/// of the characters IANA names use, and not `Local`.
fn time_zone(obj: &Object, errs: &mut Vec<FieldError>) {
    let Some(tz) = at(obj, "spec.timeZone").and_then(Value::as_str) else { return };
    let part_ok = |part: &str| {
        part != "."
            && part != ".."
            && !part.starts_with('-')
            && (1..=14).contains(&part.len())
            && part.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-+".contains(&b))
    };
    if !tz.is_empty() && !tz.split('/').all(part_ok) {
        errs.push(FieldError::invalid("spec.timeZone", tz, format!("unknown time zone {tz}")));
    } else if tz.eq_ignore_ascii_case("local") {
        errs.push(FieldError::invalid(
            "spec.timeZone",
            tz,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
}

/// One field of a cron schedule: its bounds and the names it takes.
struct Field {
    min: u64,
    max: u64,
    names: &'static [&'static str],
}

const MONTHS: &[&str] = &["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAYS: &[&str] = &["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// Seconds (always `0` in the standard form), minutes, hours, day of month, month, day of
/// week.
const FIELDS: [Field; 6] = [
    Field { min: 0, max: 59, names: &[] },
    Field { min: 0, max: 59, names: &[] },
    Field { min: 0, max: 23, names: &[] },
    Field { min: 1, max: 31, names: &[] },
    Field { min: 1, max: 12, names: MONTHS },
    Field { min: 0, max: 6, names: DAYS },
];

/// Whether `schedule` parses as robfig/cron's `ParseStandard` (what kube-apiserver and the
/// CronJob controller use) parses it; the error is its message.
fn parse_schedule(schedule: &str) -> Result<(), String> {
    let mut spec = schedule;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        // The location itself is not checked: kube refuses TZ= on new schedules anyway.
        let Some(space) = spec.find(' ') else {
            return Err("Failed to parse cron schedule: runtime error: slice bounds out of range [:-1]".into());
        };
        spec = spec[space..].trim();
    }
    if let Some(descriptor) = spec.strip_prefix('@') {
        return match descriptor {
            "yearly" | "annually" | "monthly" | "weekly" | "daily" | "midnight" | "hourly" => Ok(()),
            _ => match spec.strip_prefix("@every ") {
                Some(duration) => go_duration(duration).map_err(|e| format!("failed to parse duration {spec}: {e}")),
                None => Err(format!("unrecognized descriptor: {spec}")),
            },
        };
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!("expected exactly 5 fields, found {}: [{}]", fields.len(), fields.join(" ")));
    }
    let all = std::iter::once("0").chain(fields);
    for (text, field) in all.zip(FIELDS.iter()) {
        for range in text.split(',').filter(|r| !r.is_empty()) {
            check_range(range, field)?;
        }
    }
    Ok(())
}

/// One `*`, `n`, `a-b`, with an optional `/step` (robfig/cron's `getRange`).
fn check_range(expr: &str, field: &Field) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let (start, mut end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (field.min, field.max)
    } else {
        let start = int_or_name(low_and_high[0], field)?;
        match low_and_high.len() {
            1 => (start, start),
            2 => (start, int_or_name(low_and_high[1], field)?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            // `n/step` means `n-max/step`.
            if low_and_high.len() == 1 {
                end = field.max;
            }
            parse_int(range_and_step[1])?
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < field.min {
        return Err(format!("beginning of range ({start}) below minimum ({}): {expr}", field.min));
    }
    if end > field.max {
        return Err(format!("end of range ({end}) above maximum ({}): {expr}", field.max));
    }
    if start > end {
        return Err(format!("beginning of range ({start}) beyond end of range ({end}): {expr}"));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

fn int_or_name(expr: &str, field: &Field) -> Result<u64, String> {
    let lower = expr.to_ascii_lowercase();
    match field.names.iter().position(|n| *n == lower) {
        // Months count from 1, days of the week from 0.
        Some(i) => Ok(i as u64 + field.min),
        None => parse_int(expr),
    }
}

/// Go's `strconv.Atoi` and cron's refusal of negative numbers.
fn parse_int(expr: &str) -> Result<u64, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: invalid syntax"));
    }
    let n: i64 = expr
        .parse()
        .map_err(|_| format!("failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: value out of range"))?;
    u64::try_from(n).map_err(|_| format!("negative number ({n}) not allowed: {expr}"))
}

/// Whether `s` is a Go `time.Duration` (`1h30m`, `90s`, `1.5h`), with Go's message if not.
fn go_duration(s: &str) -> Result<(), String> {
    let invalid = || format!("time: invalid duration {s:?}");
    let mut rest = s.strip_prefix(['+', '-']).unwrap_or(s);
    if rest == "0" {
        return Ok(());
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    while !rest.is_empty() {
        let number = rest.bytes().take_while(|b| b.is_ascii_digit() || *b == b'.').count();
        if number == 0 || rest[..number].bytes().filter(|b| *b == b'.').count() > 1 || &rest[..number] == "." {
            return Err(invalid());
        }
        rest = &rest[number..];
        let unit = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        match &rest[..unit] {
            "" => return Err(format!("time: missing unit in duration {s:?}")),
            "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h" => {}
            other => return Err(format!("time: unknown unit {other:?} in duration {s:?}")),
        }
        rest = &rest[unit..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn created(v: Value) -> Object {
        let mut cj = v.as_object().unwrap().clone();
        CronJob.defaults(&mut cj);
        CronJob.prepare_for_create(&mut cj, "");
        cj
    }

    fn hello() -> Object {
        created(json!({"metadata": {"name": "hello"}, "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {
            "template": {"spec": {"containers": [{"name": "hello", "image": "busybox"}], "restartPolicy": "OnFailure"}}}}}}))
    }

    #[test]
    fn defaults() {
        let cj = hello();
        assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow");
        assert_eq!(cj["spec"]["suspend"], false);
        assert_eq!(
            (&cj["spec"]["successfulJobsHistoryLimit"], &cj["spec"]["failedJobsHistoryLimit"]),
            (&json!(3), &json!(1))
        );
        assert_eq!(cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
        // Job defaults belong to Jobs, not to a CronJob's template.
        assert!(cj["spec"]["jobTemplate"]["spec"].get("backoffLimit").is_none());
        assert!(CronJob.validate(&cj, None).is_empty(), "{:?}", CronJob.validate(&cj, None));
    }

    #[test]
    fn schedules_parse_as_cron_parses_them() {
        for ok in [
            "0 0 * * *",
            "*/15 9-17 * * MON-FRI",
            "0 0 1 jan,jul ?",
            "5 4 * * sun",
            "@daily",
            "@every 1h30m",
            "0 0 1-31/2 * *",
        ] {
            assert_eq!(parse_schedule(ok), Ok(()), "{ok}");
        }
        for (bad, msg) in [
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
            ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
            ("*/0 * * * *", "step of range should be a positive number: */0"),
            ("x * * * *", "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"),
            ("@often", "unrecognized descriptor: @often"),
            ("@every 5d", "failed to parse duration @every 5d: time: unknown unit \"d\" in duration \"5d\""),
        ] {
            assert_eq!(parse_schedule(bad), Err(msg.to_string()), "{bad}");
        }
    }

    #[test]
    fn the_template_and_the_schedule() {
        let mut cj = hello();
        cj["spec"]["schedule"] = json!("TZ=UTC 0 0 * * *");
        cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        cj["spec"]["jobTemplate"]["spec"]["selector"] = json!({"matchLabels": {"a": "b"}});
        let shown: Vec<String> = CronJob.validate(&cj, None).iter().map(|e| e.to_string()).collect();
        assert_eq!(shown, [
            "spec.schedule: Invalid value: \"TZ=UTC 0 0 * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            "spec.jobTemplate.spec.selector: Invalid value: map[string]interface {}{\"matchLabels\":map[string]interface {}{\"a\":\"b\"}}: `selector` will be auto-generated",
        ]);
        let long = created(json!({"metadata": {"name": "n".repeat(53)}, "spec": cj["spec"].clone()}));
        assert!(CronJob.validate(&long, None).iter().any(|e| e.field == "metadata.name"));
        assert!(!CronJob.validate(&long, Some(&long)).iter().any(|e| e.field == "metadata.name"));
        let mut tz = hello();
        tz["spec"]["timeZone"] = json!("Local");
        assert_eq!(CronJob.validate(&tz, None)[0].field, "spec.timeZone");
    }

    #[test]
    fn rows() {
        let mut cj = Value::Object(hello());
        cj["status"] = json!({"active": [{"name": "hello-1"}], "lastScheduleTime": "2024-01-01T00:00:00Z"});
        let cells = CronJob.row(&cj, unix_at("2024-01-01T00:03:00Z")).cells;
        assert_eq!(cells[1..6], [json!("*/5 * * * *"), json!("<none>"), json!("False"), json!(1), json!("3m")]);
        assert_eq!(cells[7..], [json!("hello"), json!("busybox"), json!("<none>")]);
    }

    fn unix_at(t: &str) -> i64 {
        crate::time::unix_seconds(t).unwrap()
    }
}
