//! `sweep.svg`: a search's monitored value against each varied key (a panel per key, on a log
//! axis where the values span a decade or more), the peak memory of each trial, and, where the
//! trials ran in parallel, their leases over time under the budget ([`super::search_timeline`]).

use super::error::ReportError;
use std::path::Path;

use plotters::prelude::*;

use super::palette::{BLUE, ORANGE};
use super::search_picture::{Area, DrawError, SearchPicture};
use super::search_population::{draw_schedule, draw_values};
use super::search_timeline::draw_timeline;

const PANEL: (u32, u32) = (440, 280);
const GREY: RGBColor = RGBColor(120, 120, 120);

/// Where a key's values sit on its axis: numbers (log10 of them where they span a decade or
/// more, all positive), or the distinct values in order of appearance.
enum Axis {
    Linear,
    Log,
    Categories(Vec<String>),
}

impl Axis {
    fn of(values: &[&str]) -> Axis {
        let numbers: Option<Vec<f64>> = values.iter().map(|v| v.parse::<f64>().ok()).collect();
        match numbers {
            Some(n) if !n.is_empty() => {
                let (lo, hi) = n
                    .iter()
                    .fold((f64::MAX, f64::MIN), |(l, h), x| (l.min(*x), h.max(*x)));
                if lo > 0.0 && hi / lo >= 10.0 {
                    Axis::Log
                } else {
                    Axis::Linear
                }
            }
            _ => {
                let mut seen: Vec<String> = Vec::new();
                for v in values {
                    if !seen.iter().any(|s| s == v) {
                        seen.push(v.to_string());
                    }
                }
                Axis::Categories(seen)
            }
        }
    }

    fn x(&self, value: &str) -> f64 {
        match self {
            Axis::Linear => value.parse().unwrap_or(0.0),
            Axis::Log => value.parse::<f64>().map_or(0.0, f64::log10),
            Axis::Categories(c) => c.iter().position(|v| v == value).unwrap_or(0) as f64,
        }
    }

    fn label(&self, x: f64) -> String {
        match self {
            Axis::Linear => format!("{}", (x * 1000.0).round() / 1000.0),
            Axis::Log => format!("{:.0e}", 10f64.powf(x)),
            Axis::Categories(c) => {
                let i = x.round();
                match (i - x).abs() < 1e-6 && i >= 0.0 {
                    true => c.get(i as usize).cloned().unwrap_or_default(),
                    false => String::new(),
                }
            }
        }
    }
}

/// Draws `picture` into an SVG at `path`: a panel per varied key, then the peaks, then (where
/// the trials ran in parallel) the timeline of their leases.
pub fn render_search_svg(picture: &SearchPicture, path: &Path) -> Result<(), ReportError> {
    let err = |e: &dyn std::fmt::Display| ReportError::at(path, e);
    let timeline = picture
        .budget
        .filter(|_| picture.trials.iter().any(|t| !t.runs.is_empty()));
    // A population: its members' values over the epochs, then each key's schedules.
    let population = usize::from(!picture.population.is_empty());
    let panels = population + picture.keys.len() + 1 + usize::from(timeline.is_some());
    let rows = panels.div_ceil(2) as u32;
    super::write_svg(path, (PANEL.0 * 2, PANEL.1 * rows), |root| {
        root.fill(&WHITE).map_err(|e| err(&e))?;
        let areas = root.split_evenly((rows as usize, 2));
        if population == 1 {
            draw_values(&areas[0], picture).map_err(|e| err(&e))?;
        }
        for (k, key) in picture.keys.iter().enumerate() {
            let area = &areas[population + k];
            match population {
                1 => draw_schedule(area, picture, k),
                _ => draw_key(area, picture, k, key),
            }
            .map_err(|e| err(&e))?;
        }
        let n = population + picture.keys.len();
        draw_peaks(&areas[n], picture).map_err(|e| err(&e))?;
        if let Some(budget) = timeline {
            draw_timeline(&areas[n + 1], picture, budget).map_err(|e| err(&e))?;
        }
        root.present().map_err(|e| err(&e))
    })
}

/// The monitored value against key `k`.
fn draw_key(
    area: &Area<'_>,
    picture: &SearchPicture,
    k: usize,
    key: &str,
) -> Result<(), DrawError> {
    let values: Vec<&str> = picture
        .trials
        .iter()
        .map(|t| t.values[k].as_str())
        .collect();
    let axis = Axis::of(&values);
    let points: Vec<(f64, f64, bool)> = picture
        .trials
        .iter()
        .filter_map(|t| Some((axis.x(&t.values[k]), t.monitored?, t.pruned)))
        .collect();
    // Categories sit half a step in from the panel's edges; numbers a tenth of their span.
    let pad = match axis {
        Axis::Categories(_) => 0.5,
        _ => 0.0,
    };
    let (x_lo, x_hi) = span(points.iter().map(|p| p.0), pad);
    let (y_lo, y_hi) = span(points.iter().map(|p| p.1), 0.0);
    let mut chart = ChartBuilder::on(area)
        .caption(
            format!("{} against {key}", picture.monitor),
            ("sans-serif", 15),
        )
        .margin(10)
        .x_label_area_size(34)
        .y_label_area_size(54)
        .build_cartesian_2d(x_lo..x_hi, y_lo..y_hi)?;
    let labels = match &axis {
        Axis::Categories(c) => c.len() * 2 + 1,
        _ => 6,
    };
    chart
        .configure_mesh()
        .max_light_lines(0)
        .x_desc(key)
        .y_desc(&picture.monitor)
        .x_labels(labels)
        .x_label_formatter(&|x| axis.label(*x))
        .y_label_formatter(&|y| super::axis_label(*y))
        .draw()?;
    // A pruned trial's value is from fewer epochs: a hollow grey ring, not a blue dot.
    chart.draw_series(points.iter().map(|&(x, y, pruned)| match pruned {
        true => Circle::new((x, y), 4, GREY.stroke_width(1)),
        false => Circle::new((x, y), 4, BLUE.filled()),
    }))?;
    Ok(())
}

/// Each trial's peak memory, as a bar per trial.
fn draw_peaks(area: &Area<'_>, picture: &SearchPicture) -> Result<(), DrawError> {
    const MIB: f64 = 1024.0 * 1024.0;
    let n = picture.trials.iter().map(|t| t.trial).max().unwrap_or(1) as f64;
    let top = picture
        .trials
        .iter()
        .filter_map(|t| t.peak)
        .max()
        .unwrap_or(1) as f64
        / MIB
        * 1.15;
    let mut chart = ChartBuilder::on(area)
        .caption("peak in use per trial", ("sans-serif", 15))
        .margin(10)
        .x_label_area_size(34)
        .y_label_area_size(54)
        .build_cartesian_2d(0.5..n + 0.5, 0.0..top.max(0.1))?;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .x_desc("trial")
        .y_desc("MiB")
        .x_labels((n as usize).min(20))
        .x_label_formatter(&|x| format!("{x:.0}"))
        .draw()?;
    let bars = picture.trials.iter().filter_map(|t| {
        let x = t.trial as f64;
        let color = if t.monitored.is_some() {
            ORANGE
        } else {
            RGBColor(180, 180, 180)
        };
        Some(Rectangle::new(
            [(x - 0.35, 0.0), (x + 0.35, t.peak? as f64 / MIB)],
            color.filled(),
        ))
    });
    chart.draw_series(bars)?;
    Ok(())
}

/// The range of `values`, padded by `pad` (or by a tenth of the range).
fn span(values: impl Iterator<Item = f64>, pad: f64) -> (f64, f64) {
    let (lo, hi) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), v| {
        (l.min(v), h.max(v))
    });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let pad = match pad > 0.0 {
        true => pad.max((hi - lo) * 0.08),
        false => ((hi - lo) * 0.1).max(hi.abs() * 0.02).max(1e-9),
    };
    (lo - pad, hi + pad)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{MemberLine, SearchPoint};

    #[test]
    fn draws_a_panel_per_key_and_the_peaks() {
        let trials: Vec<SearchPoint> = (1..=6)
            .map(|t| SearchPoint {
                trial: t,
                values: vec![
                    ["0.01", "0.001", "0.0001"][t % 3].into(),
                    ["[8]", "[32]"][t % 2].into(),
                ],
                monitored: (t != 4).then_some(0.1 * t as f64),
                peak: Some((t as u64) << 20),
                lease: Some(2 << 20),
                pruned: t == 5,
                runs: vec![(t as f64, t as f64 + 1.5)],
            })
            .collect();
        let picture = SearchPicture {
            monitor: "val_loss".into(),
            keys: vec!["train.lr".into(), "model.hidden".into()],
            trials,
            budget: None,
            population: Vec::new(),
        };
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sweep.svg");
        render_search_svg(&picture, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        for text in [
            "val_loss against train.lr",
            "val_loss against model.hidden",
            "peak in use per trial",
            "1e-3",
            "[32]",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
        // Five trials have a value: five points in each key's panel.
        assert_eq!(svg.matches("<circle").count(), 2 * 5);
        assert!(
            !svg.contains("leases over time"),
            "run one by one: no timeline"
        );
        let packed = SearchPicture {
            budget: Some(5 << 20),
            ..picture
        };
        render_search_svg(&packed, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        assert!(svg.contains("leases over time, under the budget"));
        assert!(svg.contains("\nbudget\n"), "the budget's line is named");
        // A population: its members by epoch and each key's schedules, instead of the value
        // against each key's first value.
        let member = |trial: usize, copied: Vec<(usize, usize)>| MemberLine {
            trial,
            values: vec![(1, 1.0 + trial as f64), (2, 0.5 + trial as f64), (3, 0.2)],
            settings: vec![vec![(0, 1e-3 * trial as f64), (2, 1e-1)], vec![(0, 8.0)]],
            copied,
        };
        let population = SearchPicture {
            population: vec![member(1, vec![]), member(2, vec![(2, 1)])],
            ..packed
        };
        render_search_svg(&population, &path).unwrap();
        let svg = std::fs::read_to_string(&path).unwrap();
        for text in [
            "val_loss of each member; x: copied another there",
            "train.lr of each member",
            "model.hidden of each member",
            "trial-002",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
        assert!(!svg.contains("val_loss against train.lr"));
        assert!(matches!(Axis::of(&["0.01", "0.0001"]), Axis::Log));
        assert!(matches!(Axis::of(&["16", "64"]), Axis::Linear));
    }
}
