//! Leases across processes on CubeCL pools: independent runs on wgpu share one device budget,
//! each holding its pools' pages inside its lease. Built with `cargo test --features wgpu`.

use super::wgpu::{adapter_or_skip, POOL};
use super::*;

#[test]
fn eight_wgpu_runs_under_a_budget_of_about_three_finish_inside_their_leases() {
    if !adapter_or_skip("eight_wgpu_runs_under_a_budget_of_about_three_finish_inside_their_leases")
    {
        return;
    }
    let env = Env::new();
    let sizes = [
        "[64]",
        "[128]",
        "[256]",
        "[512]",
        "[64, 64]",
        "[128, 128]",
        "[256, 256]",
        "[512, 256]",
    ];
    for (i, hidden) in sizes.iter().enumerate() {
        let config = POOL
            .replace("name = \"pool\"", &format!("name = \"r{i}\""))
            .replace("hidden = [256, 256]", &format!("hidden = {hidden}"))
            .replace("samples = 1024", "samples = 512");
        env.write(&format!("r{i}.toml"), &config);
    }
    super::leases::runs_under_three(&env, sizes.len(), "wgpu-0");
}
