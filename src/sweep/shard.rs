//! A search spread over machines by a cluster's own scheduler: each task of a job array is a
//! worker of one study, whose journal is `journal.log` in the sweep directory every task shares
//! (`tidemark sweep` makes it so; the workers are `--storage`'s, and take the study's next trial
//! as they free up, not a fixed share). The task comes from `--shard I/N`, or from a Slurm job
//! array (`SLURM_ARRAY_TASK_ID` less `SLURM_ARRAY_TASK_MIN`, of `SLURM_ARRAY_TASK_COUNT`) or a
//! Kubernetes Indexed Job (`JOB_COMPLETION_INDEX`, of `--shards N`, the Job's completions);
//! its number is only told, since workers of a study are alike.

use crate::error::UsageError;

/// A shard number that is not one of the shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("shard {index} of {count}: shards are numbered 0..N-1, with N >= 1")]
pub struct NoSuchShard {
    /// The shard asked for.
    index: usize,
    /// How many shards there are.
    count: usize,
}

/// One shard of a search's trials.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// 0-based.
    pub index: usize,
    /// How many shards share the trials.
    pub count: usize,
}

impl Shard {
    /// Parses `I/N` (`--shard 0/3`).
    pub fn parse(text: &str) -> Result<Shard, UsageError> {
        let fail = |message: String| UsageError::new(format!("--shard {text}"), message);
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| fail("expected I/N, e.g. 0/3 (shard 0 of 3)".into()))?;
        let number = |s: &str| {
            s.trim()
                .parse::<usize>()
                .map_err(|_| fail(format!("{s:?} is not a whole number")))
        };
        Shard::new(number(i)?, number(n)?).map_err(|e| fail(e.to_string()))
    }

    fn new(index: usize, count: usize) -> Result<Shard, NoSuchShard> {
        if count == 0 || index >= count {
            return Err(NoSuchShard { index, count });
        }
        Ok(Shard { index, count })
    }

    /// The shard a cluster's scheduler gives this process, from `var` (the environment):
    /// Slurm's job array, or a Kubernetes Indexed Job's index with `shards` (`--shards`).
    pub fn from_env(
        var: impl Fn(&str) -> Option<String>,
        shards: Option<usize>,
    ) -> Result<Option<Shard>, UsageError> {
        let fail = |name: &str, message: String| UsageError::new(name, message);
        let number = |name: &str| -> Result<Option<usize>, UsageError> {
            match var(name) {
                None => Ok(None),
                Some(v) => v
                    .trim()
                    .parse()
                    .map(Some)
                    .map_err(|_| fail(name, format!("{v:?} is not a whole number"))),
            }
        };
        if let (Some(id), Some(count)) = (
            number("SLURM_ARRAY_TASK_ID")?,
            number("SLURM_ARRAY_TASK_COUNT")?,
        ) {
            let min = number("SLURM_ARRAY_TASK_MIN")?.unwrap_or(0);
            let index = id.checked_sub(min).ok_or_else(|| {
                fail(
                    "SLURM_ARRAY_TASK_ID",
                    format!("{id} is below SLURM_ARRAY_TASK_MIN {min}"),
                )
            })?;
            let count = shards.unwrap_or(count);
            return Shard::new(index, count)
                .map(Some)
                .map_err(|e| fail("SLURM_ARRAY_TASK_ID", e.to_string()));
        }
        if let Some(index) = number("JOB_COMPLETION_INDEX")? {
            let count = shards.ok_or_else(|| {
                fail(
                    "JOB_COMPLETION_INDEX",
                    "is set (a Kubernetes Indexed Job); give the number of shards, the Job's \
                     completions, with --shards N"
                        .into(),
                )
            })?;
            return Shard::new(index, count)
                .map(Some)
                .map_err(|e| fail("JOB_COMPLETION_INDEX", e.to_string()));
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn a_shard_is_parsed_as_i_of_n_or_refused_naming_the_flag() {
        assert_eq!(Shard::parse("2/3").unwrap(), Shard { index: 2, count: 3 });
        for bad in ["3/3", "1", "a/3", "0/0"] {
            assert!(Shard::parse(bad)
                .unwrap_err()
                .to_string()
                .starts_with(&format!("--shard {bad}: ")));
        }
    }

    #[test]
    fn the_scheduler_s_variables_give_the_shard() {
        let slurm = [
            ("SLURM_ARRAY_TASK_ID", "3"),
            ("SLURM_ARRAY_TASK_MIN", "1"),
            ("SLURM_ARRAY_TASK_COUNT", "4"),
        ];
        assert_eq!(
            Shard::from_env(env(&slurm), None).unwrap(),
            Some(Shard { index: 2, count: 4 })
        );
        let k8s = [("JOB_COMPLETION_INDEX", "1")];
        assert_eq!(
            Shard::from_env(env(&k8s), Some(3)).unwrap(),
            Some(Shard { index: 1, count: 3 })
        );
        let e = Shard::from_env(env(&k8s), None).unwrap_err().to_string();
        assert!(e.starts_with("JOB_COMPLETION_INDEX: is set"), "{e}");
        assert_eq!(Shard::from_env(env(&[]), None).unwrap(), None);
    }
}
