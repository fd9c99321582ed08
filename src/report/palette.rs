//! The pictures' colours: matplotlib's `tab10`, so that a curve has the colour its readers know
//! from their own plots (the loss blue, the validation orange, a limit red).

use plotters::style::RGBColor;

pub const BLUE: RGBColor = RGBColor(31, 119, 180);
pub const ORANGE: RGBColor = RGBColor(255, 127, 14);
pub const GREEN: RGBColor = RGBColor(44, 160, 44);
pub const RED: RGBColor = RGBColor(214, 39, 40);
pub const PURPLE: RGBColor = RGBColor(148, 103, 189);
