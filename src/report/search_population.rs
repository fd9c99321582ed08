//! The panels of `sweep.svg` for population based training: each member's monitored value
//! over the epochs, a cross where it copied another member's checkpoint and its line going on
//! from that member's value; and, a panel per varied key, each member's value of it over the
//! epochs, its schedule.

use plotters::prelude::*;

use super::palette::tab10;
use super::search_picture::{Area, DrawError, MemberLine, SearchPicture};

/// Each member's monitored value by epoch.
pub(super) fn draw_values(area: &Area<'_>, picture: &SearchPicture) -> Result<(), DrawError> {
    let members = &picture.population;
    let epochs = last_epoch(members);
    let values: Vec<f64> = (members.iter())
        .flat_map(|m| m.values.iter().map(|&(_, v)| v))
        .filter(|v| v.is_finite())
        .collect();
    // A member that diverged would squash the rest to a line: its values stop at the top.
    let top = robust_top(&values);
    let (lo, hi) = padded(values.iter().map(|&v| v.min(top)));
    let clip = |v: f64| if v.is_finite() { v.min(hi) } else { hi };
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!(
                "{} of each member; x: copied another there",
                picture.monitor
            ),
            ("sans-serif", 15),
        )
        .margin(10)
        .x_label_area_size(34)
        .y_label_area_size(54)
        .build_cartesian_2d(0.0..epochs as f64 + 0.5, lo..hi)?;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .x_desc("epoch")
        .y_desc(&picture.monitor)
        .x_labels(epochs.min(20) + 1)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| super::axis_label(*y))
        .draw()?;
    let at = |trial: usize, epoch: usize| {
        let member = members.iter().find(|m| m.trial == trial)?;
        member.values.iter().find(|p| p.0 == epoch).map(|p| p.1)
    };
    for (i, member) in members.iter().enumerate() {
        let color = tab10(i);
        for pair in member.values.windows(2) {
            let ((e0, v0), (e1, v1)) = (pair[0], pair[1]);
            // After a copy the member holds the copied member's weights: its line goes on from
            // that member's value.
            let copied = member.copied.iter().find(|c| c.0 == e0);
            let start = copied.and_then(|&(_, from)| at(from, e0)).unwrap_or(v0);
            let line = [(e0 as f64, clip(start)), (e1 as f64, clip(v1))];
            chart.draw_series(LineSeries::new(line, color.stroke_width(2)))?;
        }
        let dots = member.values.iter().map(|&(e, v)| (e as f64, clip(v)));
        chart
            .draw_series(dots.map(|p| Circle::new(p, 2, color.filled())))?
            .label(format!("trial-{:03}", member.trial))
            .legend(move |(x, y)| Rectangle::new([(x, y - 3), (x + 12, y + 3)], color.filled()));
        let crosses = (member.copied.iter())
            .filter_map(|&(e, _)| Some((e as f64, clip(at(member.trial, e)?))));
        chart.draw_series(crosses.map(|p| Cross::new(p, 5, BLACK.stroke_width(2))))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.3))
        .label_font(("sans-serif", 11))
        .draw()?;
    Ok(())
}

/// Each member's value of varied key `k` by epoch: its schedule.
pub(super) fn draw_schedule(
    area: &Area<'_>,
    picture: &SearchPicture,
    k: usize,
) -> Result<(), DrawError> {
    let members = &picture.population;
    let epochs = last_epoch(members) as f64;
    let all: Vec<f64> = (members.iter())
        .flat_map(|m| m.settings[k].iter().map(|&(_, v)| v))
        .collect();
    let (lo, hi) = all
        .iter()
        .fold((f64::MAX, f64::MIN), |(l, h), v| (l.min(*v), h.max(*v)));
    // A log axis where the values span a decade or more, all positive.
    let log = lo > 0.0 && hi / lo >= 10.0;
    let y = |v: f64| if log { v.log10() } else { v };
    let (y_lo, y_hi) = padded(all.iter().map(|&v| y(v)));
    let key = &picture.keys[k];
    let mut chart = ChartBuilder::on(area)
        .caption(format!("{key} of each member"), ("sans-serif", 15))
        .margin(10)
        .x_label_area_size(34)
        .y_label_area_size(54)
        .build_cartesian_2d(0.0..epochs + 0.5, y_lo..y_hi)?;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .x_desc("epoch")
        .y_desc(key.as_str())
        .x_labels((epochs as usize).min(20) + 1)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|v| match log {
            true => format!("{:.0e}", 10f64.powf(*v)),
            false => format!("{v:.3}"),
        })
        .draw()?;
    for (i, member) in members.iter().enumerate() {
        // A step from each value's first epoch to the next's, the last to the member's end.
        let end = member.values.last().map_or(epochs, |p| p.0 as f64);
        let steps = &member.settings[k];
        let mut line = Vec::new();
        for (j, &(from, v)) in steps.iter().enumerate() {
            let to = steps.get(j + 1).map_or(end, |s| s.0 as f64);
            line.extend([(from as f64, y(v)), (to, y(v))]);
        }
        chart.draw_series(LineSeries::new(line, tab10(i).stroke_width(2)))?;
    }
    Ok(())
}

/// The highest value the panel shows: the largest within three interquartile ranges above the
/// upper quartile (a diverged member's values are far beyond).
fn robust_top(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let Some(&max) = sorted.last() else {
        return 1.0;
    };
    let q = |p: f64| sorted[((sorted.len() - 1) as f64 * p).round() as usize];
    let spread = (q(0.75) - q(0.25)).max(q(0.75).abs() * 0.05);
    let fence = q(0.75) + 3.0 * spread;
    let within = sorted.iter().copied().filter(|&v| v <= fence);
    within.fold(q(0.5), f64::max).min(max)
}

fn last_epoch(members: &[MemberLine]) -> usize {
    (members.iter())
        .filter_map(|m| m.values.last().map(|p| p.0))
        .max()
        .unwrap_or(1)
}

/// The range of `values`, a tenth of it added at each end.
fn padded(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
        (l.min(v), h.max(v))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = ((hi - lo) * 0.1).max(hi.abs() * 0.02).max(1e-9);
    (lo - pad, hi + pad)
}
