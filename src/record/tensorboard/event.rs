//! TensorBoard's `Event` protocol buffer, the part a scalar needs (TensorFlow's
//! `tensorflow/core/util/event.proto` and `tensorflow/core/framework/summary.proto`): an event
//! has a wall time, a step, and one of the file's version, a summary of tagged values, or a
//! session's restart. The fields of a `oneof` are plain optional fields on the wire, so they
//! are written that way here, and `simple_value` is written even when it is 0.0.

/// `tensorflow.Event`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Event {
    /// Seconds since the Unix epoch.
    #[prost(double, tag = "1")]
    pub wall_time: f64,
    /// The global step.
    #[prost(int64, tag = "2")]
    pub step: i64,
    /// `brain.Event:2`, in the file's first event.
    #[prost(string, optional, tag = "3")]
    pub file_version: Option<String>,
    /// The values of this step.
    #[prost(message, optional, tag = "5")]
    pub summary: Option<Summary>,
    /// A restart: TensorBoard drops what was logged at this step and after (a resumed run's
    /// steps after its checkpoint, logged before it was stopped).
    #[prost(message, optional, tag = "6")]
    pub session_log: Option<SessionLog>,
}

/// `tensorflow.SessionLog`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct SessionLog {
    /// `START` (1): the session (re)starts here.
    #[prost(int32, tag = "1")]
    pub status: i32,
}

/// `SessionLog.START`.
pub const START: i32 = 1;

/// `tensorflow.Summary`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Summary {
    /// The values.
    #[prost(message, repeated, tag = "1")]
    pub value: Vec<Value>,
}

/// `tensorflow.Summary.Value`, a scalar.
#[derive(Clone, PartialEq, prost::Message)]
pub struct Value {
    /// The scalar's name (`loss`, `memory/peak_mib`).
    #[prost(string, tag = "1")]
    pub tag: String,
    /// The scalar.
    #[prost(float, optional, tag = "2")]
    pub simple_value: Option<f32>,
}
