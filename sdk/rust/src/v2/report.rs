//! What a 0.2 call reports beside its output: results (Events), conditions (the
//! object's status) and context values for the later steps of a chain.
use serde_json::Value;

/// How much a result matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Severity {
    /// Worth telling the consumer: a Normal Event.
    Normal,
    /// Something is wrong or missing, but the output is usable: a Warning Event.
    Warning,
}

/// A condition's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Status {
    True,
    False,
    Unknown,
}

impl Status {
    /// `"True"`, `"False"` or `"Unknown"`, as Kubernetes writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::True => "True",
            Status::False => "False",
            Status::Unknown => "Unknown",
        }
    }
}

impl From<bool> for Status {
    fn from(b: bool) -> Status {
        if b { Status::True } else { Status::False }
    }
}

/// Something the call wants the consumer to know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallResult {
    pub severity: Severity,
    /// CamelCase, as an Event's reason (`SubnetMissing`).
    pub reason: String,
    pub message: String,
}

/// A condition the call reports on the object it handled.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    /// CamelCase condition type (`SubnetResolved`).
    pub type_: String,
    pub status: Status,
    /// CamelCase reason (`NotFound`).
    pub reason: String,
    pub message: String,
}

/// What a call reports beside its output; the role functions of [`crate::v2`] fill
/// it. The host checks it and fails the call (bad output) when a reason is empty or
/// not CamelCase, a context key is set twice or was set by an earlier step, or it is
/// over its limits (64 KiB in all, 32 results, 16 conditions, 32 context values by
/// default). [`crate::testing::v2`] applies the same checks.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Report {
    results: Vec<CallResult>,
    conditions: Vec<Condition>,
    context: Vec<(String, Value)>,
}

impl Report {
    /// A Warning Event: something is wrong or missing, the output is still usable.
    pub fn warning(&mut self, reason: impl Into<String>, message: impl Into<String>) -> &mut Self {
        self.result(Severity::Warning, reason, message)
    }

    /// A Normal Event: something worth telling the consumer.
    pub fn normal(&mut self, reason: impl Into<String>, message: impl Into<String>) -> &mut Self {
        self.result(Severity::Normal, reason, message)
    }

    /// A result of either severity.
    pub fn result(
        &mut self,
        severity: Severity,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> &mut Self {
        self.results.push(CallResult {
            severity,
            reason: reason.into(),
            message: message.into(),
        });
        self
    }

    /// A condition on the object (`report.condition("SubnetResolved", Status::True,
    /// "Found", "subnet 10.0.0.0/24")`; a `bool` works as the status too).
    pub fn condition(
        &mut self,
        type_: impl Into<String>,
        status: impl Into<Status>,
        reason: impl Into<String>,
        message: impl Into<String>,
    ) -> &mut Self {
        self.conditions.push(Condition {
            type_: type_.into(),
            status: status.into(),
            reason: reason.into(),
            message: message.into(),
        });
        self
    }

    /// A context value for the later steps of the chain, which read it with
    /// [`Context::value`](super::Context::value). Each key has one owner: set a key
    /// once, and never one an earlier step set.
    pub fn set_context(&mut self, key: impl Into<String>, value: impl Into<Value>) -> &mut Self {
        self.context.push((key.into(), value.into()));
        self
    }

    /// The results so far, in order.
    pub fn results(&self) -> &[CallResult] {
        &self.results
    }

    /// The conditions so far, in order.
    pub fn conditions(&self) -> &[Condition] {
        &self.conditions
    }

    /// The context values set so far, in order.
    pub fn context(&self) -> &[(String, Value)] {
        &self.context
    }

    /// Whether nothing was reported.
    pub fn is_empty(&self) -> bool {
        self.results.is_empty() && self.conditions.is_empty() && self.context.is_empty()
    }

    /// The report with JSON already serialised, as the export glue sends it.
    pub(crate) fn into_raw(self) -> crate::__private::v2::RawReport {
        crate::__private::v2::RawReport {
            results: self
                .results
                .into_iter()
                .map(|r| (r.severity == Severity::Warning, r.reason, r.message))
                .collect(),
            conditions: self
                .conditions
                .into_iter()
                .map(|c| (c.type_, c.status.as_str().to_string(), c.reason, c.message))
                .collect(),
            set_context: self
                .context
                .into_iter()
                .map(|(k, v)| (k, v.to_string()))
                .collect(),
        }
    }
}
