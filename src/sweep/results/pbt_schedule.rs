//! The schedule population based training found: the settings that the best member's weights
//! trained with, epoch by epoch, back through the members it copied (before a copy, the
//! copied member's), as a table and as `[train.schedule]` a config can take.

use std::collections::BTreeMap;

use super::rank::TrialRow;
use crate::sweep::space::{literal, number};

/// The settings each epoch `1..=upto` of member `number`'s weights trained with.
fn ancestry(
    rows: &BTreeMap<usize, &TrialRow>,
    number: usize,
    upto: usize,
) -> Vec<BTreeMap<String, toml::Value>> {
    let Some(row) = rows.get(&number) else {
        return Vec::new();
    };
    // Its own settings in epoch `e`: those of the interval that ends at or after it.
    let own = |e: usize| {
        let interval = row.lineage.iter().find(|i| e <= i.epoch);
        match (interval, row.lineage.last()) {
            (Some(i), _) => i.values.clone(),
            (None, Some(last)) => last
                .copied
                .as_ref()
                .map_or(&last.values, |c| &c.values)
                .clone(),
            (None, None) => row.values.clone(),
        }
    };
    let last_copy = (row.lineage.iter())
        .filter(|i| i.epoch < upto)
        .filter_map(|i| Some((i.epoch, i.copied.as_ref()?.from)))
        .next_back();
    match last_copy {
        // Each step back ends before the last one's copy: the walk ends.
        Some((epoch, from)) => {
            let mut before = ancestry(rows, from, epoch);
            before.extend((epoch + 1..=upto).map(own));
            before
        }
        _ => (1..=upto).map(own).collect(),
    }
}

/// `rows`' best population member's schedule, for `sweep.md` and `tidemark report`: a table of
/// its settings by epochs, and `train.lr`'s as a piecewise `[train.schedule]`; `None` for a
/// search that is not population based training.
pub fn schedule_text(rows: &[TrialRow]) -> Option<String> {
    let best = rows
        .iter()
        .find(|r| r.rank == Some(1) && !r.lineage.is_empty())?;
    let by_number: BTreeMap<usize, &TrialRow> = rows.iter().map(|r| (r.trial, r)).collect();
    let epochs = ancestry(&by_number, best.trial, best.epochs?);
    let keys: Vec<&String> = epochs.first()?.keys().collect();
    // Runs of epochs with the same settings.
    let mut runs: Vec<(usize, usize, &BTreeMap<String, toml::Value>)> = Vec::new();
    for (i, values) in epochs.iter().enumerate() {
        match runs.last_mut() {
            Some(run) if run.2 == values => run.1 = i + 1,
            _ => runs.push((i + 1, i + 1, values)),
        }
    }
    let mut text = format!(
        "The schedule {}'s weights trained with, epoch by epoch (before a copy, the copied \
         member's):\n\n| epochs | {} |\n|---|{}\n",
        best.name,
        keys.iter()
            .map(|k| k.as_str())
            .collect::<Vec<_>>()
            .join(" | "),
        "---|".repeat(keys.len())
    );
    for &(from, to, values) in &runs {
        let span = match from == to {
            true => from.to_string(),
            false => format!("{from}-{to}"),
        };
        // Every epoch sets the same keys (the journal's exploits are checked so as they are
        // read); a cell that did not would read as unset, never panic.
        let cells: Vec<String> = (keys.iter())
            .map(|k| values.get(*k).map_or_else(|| "-".to_string(), literal))
            .collect();
        text += &format!("| {span} | {} |\n", cells.join(" | "));
    }
    let rate = |values: &BTreeMap<String, toml::Value>| values.get("train.lr").and_then(number);
    if let Some(first) = rate(runs[0].2) {
        let milestones: Vec<String> = runs[1..].iter().map(|r| (r.0 - 1).to_string()).collect();
        let factors: Vec<String> = (runs[1..].iter())
            .filter_map(|r| Some(format!("{}", rate(r.2)? / first)))
            .collect();
        text +=
            &format!("\ntrain.lr's schedule, for a config:\n\n```toml\n[train]\nlr = {first}\n");
        if !milestones.is_empty() {
            text += &format!(
                "\n[train.schedule]\nkind = \"piecewise\"\nmilestones = [{}]\nfactors = [{}]\n",
                milestones.join(", "),
                factors.join(", ")
            );
        }
        text += "```\n";
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sweep::results::{Copied, Interval, TrialStatus};

    fn lr(x: f64) -> BTreeMap<String, toml::Value> {
        BTreeMap::from([("train.lr".to_string(), toml::Value::Float(x))])
    }

    fn member(trial: usize, own: f64, copied: &[(usize, usize, f64)]) -> TrialRow {
        let mut settings = own;
        let lineage = (1..=3)
            .map(|epoch| {
                let copy = copied.iter().find(|c| c.0 == epoch);
                let at = Interval {
                    epoch,
                    value: Some(1.0),
                    values: lr(settings),
                    copied: copy.map(|&(_, from, x)| Copied {
                        from,
                        values: lr(x),
                    }),
                };
                if let Some(&(_, _, x)) = copy {
                    settings = x;
                }
                at
            })
            .collect();
        TrialRow {
            values: lr(own),
            status: TrialStatus::Completed,
            epochs: Some(4),
            lineage,
            ..TrialRow::not_run(trial)
        }
    }

    #[test]
    fn the_best_s_schedule_goes_back_through_the_members_it_copied() {
        // Member 2 copies 1 after epoch 2 and goes on at 0.004; member 1 copied 3 after
        // epoch 1 and trained epoch 2 at 0.008.
        let mut rows = vec![
            member(1, 0.01, &[(1, 3, 0.008)]),
            member(2, 0.02, &[(2, 1, 0.004)]),
            member(3, 0.03, &[]),
        ];
        rows[1].rank = Some(1);
        let text = schedule_text(&rows).unwrap();
        // Epoch 1: member 3's weights at 0.03; epoch 2: member 1's at 0.008; 3-4: its own.
        assert!(
            text.contains("| 1 | 0.03 |\n| 2 | 0.008 |\n| 3-4 | 0.004 |\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "lr = 0.03\n\n[train.schedule]\nkind = \"piecewise\"\nmilestones = [1, 2]\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("factors = [0.26666666666666666, 0.13333333333333333]"),
            "{text}"
        );
        // Not a population: nothing.
        let plain = TrialRow {
            rank: Some(1),
            ..TrialRow::not_run(1)
        };
        assert_eq!(schedule_text(&[plain]), None);
    }
}
