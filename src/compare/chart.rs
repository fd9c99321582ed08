//! `compare.svg`: the policies' memory, epoch by epoch, in one chart.

use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use super::ComparePolicy;
use crate::record::{Event, Snapshot};
use crate::report::{draw_legend, Mark, ReportError};

const MIB: f64 = 1024.0 * 1024.0;

/// A policy's line: the policy, its limit, its snapshots.
type Series = (ComparePolicy, Option<u64>, Vec<Snapshot>);

/// The chart's plotting area.
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

const PALETTE: [RGBColor; 5] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
];

/// Peak in use per epoch, one line per policy, and each limit as a horizontal line.
pub(super) fn chart(series: &[Series], name: &str, path: &Path) -> Result<(), ReportError> {
    let err = |e: &dyn std::fmt::Display| ReportError::at(path, e);
    let (x_max, y_max) = bounds(series);
    crate::report::write_svg(path, (900, 480), |root| {
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let source = series
            .first()
            .and_then(|(_, _, s)| s.first())
            .map_or(String::new(), |s| s.memory.source.to_string());
        let title = format!(
            "{name}: memory per epoch by policy ({source}; solid: peak in use, dotted: reserved)"
        );
        let area = root
            .titled(&title, ("sans-serif", 20))
            .map_err(|e| err(&e))?;
        // The legend in a strip of its own, where it covers no line.
        let (chart_area, legend_area) = area.split_horizontally(720);
        let mut chart = ChartBuilder::on(&chart_area)
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
        let mut legend = Vec::new();
        for (i, line) in series.iter().enumerate() {
            // Policies often have the same peak in use, and their lines would hide one another;
            // each is drawn thinner than the one before it, so identical lines show as nested
            // bands.
            let width = (2 * (series.len() - i)) as u32;
            let color = PALETTE[i % PALETTE.len()];
            draw_policy(&mut chart, line, color, width, x_max).map_err(|e| err(&e))?;
            legend.push((line.0.name().to_string(), color, Mark::Line));
            if let Some(limit) = line.1 {
                let text = format!("{}: limit {:.1} MiB", line.0.name(), limit as f64 / MIB);
                legend.push((text, color, Mark::Dashed));
            }
        }
        draw_legend(&legend_area, &legend, 30).map_err(|e| err(&e))?;
        root.present().map_err(|e| err(&e))
    })
}

/// Each epoch (and run start) as (epoch, MiB): the peak in use, or with `reserved` the bytes
/// reserved.
fn points(snaps: &[Snapshot], reserved: bool) -> Vec<(f64, f64)> {
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
}

/// The last epoch, and the highest figure or limit with room above it.
fn bounds(series: &[Series]) -> (f64, f64) {
    let x_max = series
        .iter()
        .flat_map(|(_, _, s)| points(s, false))
        .map(|p| p.0)
        .fold(1.0, f64::max);
    let y_max = series
        .iter()
        .flat_map(|(_, limit, s)| {
            points(s, false)
                .into_iter()
                .chain(points(s, true))
                .map(|p| p.1)
                .chain(limit.map(|l| l as f64 / MIB))
        })
        .fold(1.0, f64::max)
        * 1.15;
    (x_max, y_max)
}

/// One policy: its peak in use (solid), its reserved bytes (dotted) and its limit (dashed).
fn draw_policy(
    chart: &mut Chart<'_, '_>,
    (_, limit, snaps): &Series,
    color: RGBColor,
    width: u32,
    x_max: f64,
) -> Result<(), DrawingAreaErrorKind<std::io::Error>> {
    chart.draw_series(LineSeries::new(
        points(snaps, false),
        color.stroke_width(width),
    ))?;
    chart.draw_series(DashedLineSeries::new(
        points(snaps, true),
        2,
        4,
        color.stroke_width(2),
    ))?;
    if let Some(limit) = limit {
        let y = *limit as f64 / MIB;
        chart.draw_series(DashedLineSeries::new(
            vec![(-0.1, y), (x_max + 0.1, y)],
            8,
            5,
            color.stroke_width(1),
        ))?;
    }
    Ok(())
}
