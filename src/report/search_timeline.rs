//! The timeline panel of `sweep.svg` for a search whose trials ran in parallel: each run of a
//! trial a band as tall as its lease from its start to its end, stacked so that bands of runs
//! at once do not overlap, under the budget's line. Blue: the trial completed; orange, marked
//! "p": the pruner stopped it; grey: it failed. A trial the pruner paused has a band per run.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::palette::{BLUE, ORANGE, RED};
use super::search_picture::{Area, DrawError, SearchPicture, SearchPoint};
use crate::memory::format_bytes;

const MIB: f64 = 1024.0 * 1024.0;

/// A trial's band: seconds from, seconds to, and its bottom and top in MiB.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Band {
    pub trial: usize,
    pub from: f64,
    pub to: f64,
    pub bottom: f64,
    pub top: f64,
    pub ending: Ending,
}

/// How a band's trial ended, for its colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Ending {
    Completed,
    Pruned,
    Failed,
}

/// The bands of the runs. Each run takes the lowest row that no run at the same time holds,
/// in the order they started, so that the rows at any moment are the runs at that moment; then,
/// row by row from the lowest, each band sits on the highest band below it that ran at the same
/// time. The stack at any moment is then the leases running then (a lease a little larger than
/// a neighbour's never climbs over it into a row of its own).
pub(super) fn bands(trials: &[SearchPoint]) -> Vec<Band> {
    let mut ran: Vec<(&SearchPoint, (f64, f64), u64)> = trials
        .iter()
        .filter_map(|t| Some((t, t.lease?)))
        .flat_map(|(t, lease)| t.runs.iter().map(move |&run| (t, run, lease)))
        .collect();
    ran.sort_by(|a, b| a.1 .0.total_cmp(&b.1 .0));
    let at_once = |a: &Band, b: &Band| a.from < b.to && b.from < a.to;
    let mut placed: Vec<(usize, Band)> = Vec::new();
    for (t, (from, to), lease) in ran {
        let band = Band {
            trial: t.trial,
            from,
            to,
            bottom: 0.0,
            top: lease as f64 / MIB,
            ending: match (t.pruned, t.monitored) {
                (true, _) => Ending::Pruned,
                (false, Some(_)) => Ending::Completed,
                (false, None) => Ending::Failed,
            },
        };
        let taken = |row: usize| (placed.iter()).any(|(r, b)| *r == row && at_once(b, &band));
        let row = (0..).find(|&row| !taken(row)).expect("a free row");
        placed.push((row, band));
    }
    let rows = placed.iter().map(|(row, _)| *row).max().unwrap_or(0);
    for row in 1..=rows {
        let in_row: Vec<usize> = (0..placed.len()).filter(|&i| placed[i].0 == row).collect();
        for i in in_row {
            let band = placed[i].1;
            let below = (placed.iter())
                .filter(|(r, b)| *r < row && at_once(b, &band))
                .map(|(_, b)| b.top)
                .fold(0.0, f64::max);
            let height = band.top - band.bottom;
            placed[i].1.bottom = below;
            placed[i].1.top = below + height;
        }
    }
    placed.into_iter().map(|(_, band)| band).collect()
}

/// The leases over wall time, under the budget.
pub(super) fn draw_timeline(
    area: &Area<'_>,
    picture: &SearchPicture,
    budget: u64,
) -> Result<(), DrawError> {
    let bands = bands(&picture.trials);
    let end = bands.iter().map(|b| b.to).fold(1.0, f64::max) * 1.02;
    let budget_bytes = budget;
    let budget = budget as f64 / MIB;
    let stacked = bands.iter().map(|b| b.top).fold(0.0, f64::max);
    // A budget far above what the trials leased would flatten their bands: then the axis
    // ends above the bands, and the budget is named at the top instead of drawn.
    let budget_shown = budget <= 4.0 * stacked;
    let top = match budget_shown {
        true => budget.max(stacked) * 1.1,
        false => stacked * 1.3,
    };
    let mut chart = ChartBuilder::on(area)
        .caption(
            "leases over time, under the budget (p: pruned)",
            ("sans-serif", 15),
        )
        .margin(10)
        .x_label_area_size(34)
        .y_label_area_size(54)
        .build_cartesian_2d(0.0..end, 0.0..top)?;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .x_desc("seconds since the first trial started")
        .y_desc("MiB leased")
        .draw()?;
    let fill = |b: &Band| match b.ending {
        Ending::Completed => BLUE.mix(0.55),
        Ending::Pruned => ORANGE.mix(0.45),
        Ending::Failed => RGBColor(150, 150, 150).mix(0.55),
    };
    chart.draw_series(
        bands
            .iter()
            .map(|b| Rectangle::new([(b.from, b.bottom), (b.to, b.top)], fill(b).filled())),
    )?;
    chart.draw_series(
        bands
            .iter()
            .map(|b| Rectangle::new([(b.from, b.bottom), (b.to, b.top)], WHITE.stroke_width(1))),
    )?;
    // Each band's trial, where the band has room for it: the labels of short runs side by side
    // ran together into one unreadable string.
    let labels = bands.iter().filter_map(|b| {
        let mark = match b.ending {
            Ending::Pruned => "p",
            _ => "",
        };
        let text = format!("{}{mark}", b.trial);
        let (left, top) = chart.backend_coord(&(b.from, b.top));
        let (right, bottom) = chart.backend_coord(&(b.to, b.bottom));
        // About 6.5 pixels a character at 11 points.
        let wide = (right - left) as f64 >= 6.5 * text.len() as f64 + 2.0;
        let tall = bottom - top >= 11;
        let font = ("sans-serif", 11).into_font().color(&BLACK);
        let font = font.pos(Pos::new(HPos::Center, VPos::Center));
        let at = ((b.from + b.to) / 2.0, (b.bottom + b.top) / 2.0);
        (wide && tall).then(|| Text::new(text, at, font))
    });
    let labels: Vec<_> = labels.collect();
    chart.draw_series(labels)?;
    let (label, at) = match budget_shown {
        true => {
            chart.draw_series(LineSeries::new(
                [(0.0, budget), (end, budget)],
                RED.stroke_width(2),
            ))?;
            ("budget".to_string(), budget)
        }
        false => (
            format!("budget {}, above the scale", format_bytes(budget_bytes)),
            top,
        ),
    };
    chart.draw_series(std::iter::once(Text::new(
        label,
        (end * 0.01, at),
        ("sans-serif", 12).into_font().color(&RED),
    )))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(trial: usize, ran: (f64, f64), lease: u64) -> SearchPoint {
        SearchPoint {
            trial,
            values: vec![],
            monitored: (trial != 3).then_some(0.5),
            pruned: trial == 4,
            peak: None,
            lease: Some(lease << 20),
            runs: vec![ran],
        }
    }

    #[test]
    fn bands_of_trials_at_once_stack_and_later_ones_reuse_the_room() {
        let b = bands(&[
            point(1, (0.0, 2.0), 4),
            point(2, (0.0, 1.0), 3),
            point(3, (1.0, 3.0), 2),
            point(4, (2.0, 4.0), 4),
        ]);
        let at = |t: usize| b.iter().find(|x| x.trial == t).map(|x| (x.bottom, x.top));
        assert_eq!(at(1), Some((0.0, 4.0)));
        assert_eq!(at(2), Some((4.0, 7.0)));
        assert_eq!(at(3), Some((4.0, 6.0)), "trial 2's room, once it ended");
        assert_eq!(at(4), Some((0.0, 4.0)), "trial 1's room");
        let ending = |t: usize| b.iter().find(|x| x.trial == t).unwrap().ending;
        assert_eq!(ending(3), Ending::Failed);
        assert_eq!(ending(4), Ending::Pruned);
        assert_eq!(ending(1), Ending::Completed);
        // A lease a little larger than a neighbour's keeps to the rows of the runs at once.
        // (Each placed at the lowest height free over its whole run, the third would climb over
        // the second into a third row, with two trials running.)
        let b = bands(&[
            point(1, (0.0, 2.0), 10),
            point(2, (1.0, 3.0), 10),
            point(3, (2.5, 4.0), 11),
        ]);
        let rows: Vec<(f64, f64)> = b.iter().map(|x| (x.bottom, x.top)).collect();
        assert_eq!(rows, [(0.0, 10.0), (11.0, 21.0), (0.0, 11.0)]);
        // The stack is the leases at once, whatever their sizes: 20 then 60 is 80 high.
        let b = bands(&[point(1, (0.0, 2.0), 20), point(2, (1.0, 3.0), 60)]);
        assert_eq!((b[1].bottom, b[1].top), (20.0, 80.0));
        // A trial paused between runs has a band per run.
        let mut paused = point(5, (0.0, 1.0), 2);
        paused.runs.push((3.0, 4.0));
        let b = bands(&[paused]);
        assert_eq!(b.len(), 2);
        assert_eq!((b[1].from, b[1].bottom), (3.0, 0.0));
    }
}
