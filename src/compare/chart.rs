//! `compare.svg`: the policies' memory, epoch by epoch, in one chart.

use std::path::Path;

use plotters::prelude::*;

use super::ComparePolicy;
use crate::memory::{Event, Snapshot};

/// Peak in use per epoch, one line per policy, and each limit as a horizontal line.
pub(super) fn chart(
    series: &[(ComparePolicy, Option<u64>, Vec<Snapshot>)],
    name: &str,
    path: &Path,
) -> Result<(), String> {
    const MIB: f64 = 1024.0 * 1024.0;
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let figure = |snaps: &[Snapshot], reserved: bool| -> Vec<(f64, f64)> {
        snaps
            .iter()
            .filter(|s| matches!(s.event, Event::RunStart | Event::Epoch))
            .map(|s| {
                let bytes = if reserved {
                    s.memory.bytes_reserved
                } else {
                    s.memory.peak_bytes_in_use
                };
                (s.epoch as f64, bytes as f64 / MIB)
            })
            .collect()
    };
    let points = |snaps: &[Snapshot]| figure(snaps, false);
    let x_max = series
        .iter()
        .flat_map(|(_, _, s)| points(s))
        .map(|p| p.0)
        .fold(1.0, f64::max);
    let y_max = series
        .iter()
        .flat_map(|(_, limit, s)| {
            points(s)
                .into_iter()
                .chain(figure(s, true))
                .map(|p| p.1)
                .chain(limit.map(|l| l as f64 / MIB))
        })
        .fold(1.0, f64::max)
        * 1.15;
    let root = SVGBackend::new(path, (900, 480)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let source = series
        .first()
        .and_then(|(_, _, s)| s.first())
        .map_or(String::new(), |s| s.memory.source.to_string());
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("{name}: memory per epoch by policy ({source}; solid: peak in use, dotted: reserved)"),
            ("sans-serif", 20),
        )
        .margin(12)
        .x_label_area_size(36)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.1f64..x_max + 0.1, 0f64..y_max)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc("epoch (0 = run start)")
        .y_desc("MiB")
        .x_labels(((x_max as usize) + 1).min(40))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()
        .map_err(|e| err(&e))?;
    let palette = [
        RGBColor(31, 119, 180),
        RGBColor(255, 127, 14),
        RGBColor(44, 160, 44),
        RGBColor(214, 39, 40),
        RGBColor(148, 103, 189),
    ];
    // Policies often have the same peak in use, and their lines would hide one another; each
    // is drawn thinner than the one before it, so identical lines show as nested bands.
    let widths = |i: usize| (2 * (series.len() - i)) as u32;
    for (i, (policy, limit, snaps)) in series.iter().enumerate() {
        let color = palette[i % palette.len()];
        let width = widths(i);
        chart
            .draw_series(LineSeries::new(points(snaps), color.stroke_width(width)))
            .map_err(|e| err(&e))?
            .label(policy.name())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(width))
            });
        chart
            .draw_series(DashedLineSeries::new(
                figure(snaps, true),
                2,
                4,
                color.stroke_width(2),
            ))
            .map_err(|e| err(&e))?;
        if let Some(limit) = limit {
            let y = *limit as f64 / MIB;
            chart
                .draw_series(DashedLineSeries::new(
                    vec![(-0.1, y), (x_max + 0.1, y)],
                    8,
                    5,
                    color.stroke_width(1),
                ))
                .map_err(|e| err(&e))?
                .label(format!("{}: limit {:.1} MiB", policy.name(), y))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(1))
                });
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .label_font(("sans-serif", 13))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}
