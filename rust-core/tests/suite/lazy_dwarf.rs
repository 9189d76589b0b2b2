//! A command indexes only the DWARF units its walk needs, and reports exactly what it
//! reports with every unit indexed: on the recorded stops of `fuzz/images`.

use crate::common;
use crate::fuzzing;

use tokio_async_core::dwarf::DebugInfo;
use tokio_async_core::inspect::inspect;

use fuzzing::{Harness, PatchedMemory, FULL};

#[test]
fn a_command_reads_only_the_units_it_needs_and_reports_as_with_every_unit() {
    let harness = Harness::new(&fuzzing::fuzz_dir().join("images"), common::fixture);
    let mut compared = Vec::new();
    for image in &harness.images {
        let path = common::fixture(&image.program, &image.profile);
        let memory = PatchedMemory { image, writes: &[] };
        let request = image.request(FULL);
        let report = |debug: &DebugInfo| {
            let report = inspect(debug, &memory, image.load_bias, &request)
                .unwrap_or_else(|error| panic!("{}: {error}", image.name));
            serde_json::to_string(&report).unwrap()
        };

        let lazy = DebugInfo::load(&path).unwrap();
        let lazy_report = report(&lazy);
        let whole = DebugInfo::load(&path).unwrap();
        whole.index_all();
        assert_eq!(whole.units_indexed().0, whole.units_indexed().1);
        assert!(
            lazy_report == report(&whole),
            "{}: the report differs with every unit indexed",
            image.name
        );
        assert!(
            lazy_report.contains("\"tasks\":[{"),
            "{}: no tasks in {lazy_report:.300}",
            image.name
        );

        let (read, all) = lazy.unit_bytes_indexed();
        let (units, all_units) = lazy.units_indexed();
        // A dev build splits each crate into many units and the walk needs few of them; a
        // release build's few large units hold most of what any walk reads. In these small
        // programs tokio's and std's units, where the threads' frames are, are most of the
        // DWARF (bench/RESULTS.md has a service's figures).
        if image.profile == "dev" {
            assert!(
                units * 2 < all_units,
                "{}: {units} of {all_units} units read",
                image.name
            );
        }
        assert!(read < all, "{}: every unit read", image.name);
        compared.push(format!(
            "{} {units}/{all_units} units, {}/{} KB",
            image.name,
            read / 1024,
            all / 1024
        ));
    }
    eprintln!("{}", compared.join("\n"));
    assert!(compared.len() >= 6, "compared only {compared:?}");
}
