//! Population based training (`method = "pbt"`): a population trained at once, whose weak
//! members copy a strong member's checkpoint at each interval and go on with its settings,
//! perturbed ([`rule`]). The population is a study's trials, each pausing at every interval
//! as ASHA's trials pause at their rungs; once every member has reached an interval, the
//! study decides its exploits (`study/population.rs`), and each member goes on from its own
//! checkpoint or the one it copied, resumed retuned ([`Trainer::retune`](crate::Trainer::retune)).
//! Its settings, `[sweep.pbt]` checked, are the search's ([`Pbt`](crate::sweep::space::Pbt)).

pub mod rule;

pub use rule::{Member, Rule};
