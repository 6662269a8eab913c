//! SVG charts for reports (plotters): grouped bars for throughput per phase and engine,
//! latency percentiles per engine on a logarithmic axis, and series over time.

use std::path::Path;

use plotters::prelude::*;

type ChartResult = Result<(), Box<dyn std::error::Error + Send + Sync>>;

const COLORS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

fn err(e: impl std::fmt::Display) -> Box<dyn std::error::Error + Send + Sync> {
    e.to_string().into()
}

/// The legend every chart uses: upper left, boxed.
fn draw_legend<'a, DB, CT>(chart: &mut ChartContext<'a, DB, CT>) -> ChartResult
where
    DB: DrawingBackend + 'a,
    CT: CoordTranslate,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .draw()
        .map_err(err)
}

/// Grouped bars: one group per category, one bar per series.
pub fn grouped_bars(
    path: &Path,
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
) -> ChartResult {
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let groups = categories.len().max(1);
    let slots = series.len() + 1;
    let max = series
        .iter()
        .flat_map(|(_, v)| v.iter().copied())
        .fold(0.0f64, f64::max)
        .max(1.0);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..(groups * slots) as f64, 0.0..max * 1.1)
        .map_err(err)?;
    // One tick per slot; only the tick in the middle of a group is labelled.
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(y_label)
        .x_labels(groups * slots + 1)
        .x_label_formatter(&|x| {
            let i = x.round() as usize;
            if (x - x.round()).abs() < 1e-6 && i % slots == slots / 2 {
                categories.get(i / slots).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        })
        .y_label_formatter(&|y| format!("{y:.0}"))
        .draw()
        .map_err(err)?;
    for (i, (name, values)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(values.iter().enumerate().map(|(g, &v)| {
                let x0 = (g * slots + i) as f64 + 0.5;
                Rectangle::new([(x0, 0.0), (x0 + 1.0, v)], color.filled())
            }))
            .map_err(err)?
            .label(name.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
    }
    draw_legend(&mut chart)?;
    root.present().map_err(err)?;
    Ok(())
}

/// Latency percentiles (p50, p95, p99, p99.9) per series, log-scaled nanoseconds.
pub fn percentiles(path: &Path, title: &str, series: &[(String, [u64; 4])]) -> ChartResult {
    let categories = ["p50", "p95", "p99", "p99.9"].map(String::from);
    let series: Vec<(String, Vec<f64>)> = series
        .iter()
        .map(|(name, v)| (name.clone(), v.iter().map(|&x| x.max(1) as f64).collect()))
        .collect();
    lines(
        path,
        title,
        "latency (ns, log scale)",
        &categories,
        &series,
        true,
    )
}

/// One line per series over categorical x positions, optionally on a log y axis.
pub fn lines(
    path: &Path,
    title: &str,
    y_label: &str,
    categories: &[String],
    series: &[(String, Vec<f64>)],
    log: bool,
) -> ChartResult {
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let values = || series.iter().flat_map(|(_, v)| v.iter().copied());
    let max = values().fold(1.0f64, f64::max);
    let min = values().fold(f64::INFINITY, f64::min).clamp(1e-9, max);
    let last = categories.len().saturating_sub(1) as f64;
    let x_range = -0.2f64..last + 0.2;
    let label = |x: &f64| {
        let i = x.round() as usize;
        if (x - x.round()).abs() < 0.01 {
            categories.get(i).cloned().unwrap_or_default()
        } else {
            String::new()
        }
    };
    let mut builder = ChartBuilder::on(&root);
    builder
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80);
    macro_rules! draw {
        ($chart:expr) => {{
            let mut chart = $chart;
            chart
                .configure_mesh()
                .y_desc(y_label)
                .x_labels(categories.len())
                .x_label_formatter(&label)
                .y_label_formatter(&|y| format!("{y:.0}"))
                .draw()
                .map_err(err)?;
            for (i, (name, v)) in series.iter().enumerate() {
                let color = COLORS[i % COLORS.len()];
                let points: Vec<(f64, f64)> =
                    v.iter().enumerate().map(|(x, &y)| (x as f64, y)).collect();
                chart
                    .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))
                    .map_err(err)?
                    .label(name.clone())
                    .legend(move |(x, y)| {
                        PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                    });
                chart
                    .draw_series(
                        points
                            .into_iter()
                            .map(|p| Circle::new(p, 4, color.filled())),
                    )
                    .map_err(err)?;
            }
            draw_legend(&mut chart)?;
        }};
    }
    if log {
        draw!(
            builder
                .build_cartesian_2d(x_range, (min / 2.0..max * 2.0).log_scale())
                .map_err(err)?
        );
    } else {
        draw!(
            builder
                .build_cartesian_2d(x_range, 0.0..max * 1.1)
                .map_err(err)?
        );
    }
    root.present().map_err(err)?;
    Ok(())
}

/// One line per series of (seconds, value) points, on a time axis.
pub fn over_time(
    path: &Path,
    title: &str,
    y_label: &str,
    series: &[(String, Vec<(f64, f64)>)],
) -> ChartResult {
    let root = SVGBackend::new(path, (960, 540)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let points = || series.iter().flat_map(|(_, v)| v.iter().copied());
    let x_max = points().map(|p| p.0).fold(1.0f64, f64::max);
    let y_max = points().map(|p| p.1).fold(0.0f64, f64::max).max(1e-9);
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 22))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..x_max * 1.02, 0.0..y_max * 1.1)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("seconds")
        .y_desc(y_label)
        .y_label_formatter(&|y| {
            if y_max >= 100.0 {
                format!("{y:.0}")
            } else {
                format!("{y:.2}")
            }
        })
        .draw()
        .map_err(err)?;
    for (i, (name, v)) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        chart
            .draw_series(LineSeries::new(v.clone(), color.stroke_width(2)))
            .map_err(err)?
            .label(name.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
            });
    }
    draw_legend(&mut chart)?;
    root.present().map_err(err)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_svg_charts() {
        let dir = tempfile::tempdir().unwrap();
        let bars = dir.path().join("bars.svg");
        grouped_bars(
            &bars,
            "throughput",
            "ops/s",
            &["A".into(), "B".into()],
            &[("x".into(), vec![1.0, 2.0]), ("y".into(), vec![3.0, 4.0])],
        )
        .unwrap();
        let svg = std::fs::read_to_string(&bars).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("throughput") && svg.contains("<rect"));
        let lines = dir.path().join("lat.svg");
        percentiles(&lines, "latency", &[("x".into(), [100, 200, 400, 9000])]).unwrap();
        let svg = std::fs::read_to_string(&lines).unwrap();
        assert!(svg.contains("p99.9") && svg.contains("<polyline"));
        let sweep = dir.path().join("sweep.svg");
        super::lines(
            &sweep,
            "sweep",
            "ops/s",
            &["1x".into(), "2x".into()],
            &[("C".into(), vec![10.0, 5.0])],
            false,
        )
        .unwrap();
        assert!(std::fs::read_to_string(&sweep).unwrap().contains("2x"));
        let time = dir.path().join("time.svg");
        over_time(
            &time,
            "over time",
            "ops/s",
            &[("x".into(), vec![(10.0, 5.0), (20.0, 4.0)])],
        )
        .unwrap();
        let svg = std::fs::read_to_string(&time).unwrap();
        assert!(svg.contains("seconds") && svg.contains("<polyline"));
    }
}
