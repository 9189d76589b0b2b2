//! Prints a type's layout as the core reads it from a binary's DWARF: each field's offset,
//! name and type, nested to a depth, with enum variants. What a new entry of the layout
//! table (`src/layouts/`) is written from:
//!
//! `cargo run -p tokio-async-core --example type_layout -- BINARY TYPE [DEPTH]`
//!
//! TYPE is a fully qualified name (`tokio::sync::notify::Notify`); a name ending in `*`
//! lists the types whose names start with the rest instead.

use std::path::Path;

use tokio_async_core::dwarf::{DebugInfo, DieRef};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(binary), Some(name)) = (args.first(), args.get(1)) else {
        eprintln!("usage: type_layout BINARY TYPE [DEPTH]");
        std::process::exit(2);
    };
    let depth: usize = args
        .get(2)
        .and_then(|depth| depth.parse().ok())
        .unwrap_or(3);
    let debug = DebugInfo::load(Path::new(binary)).unwrap_or_else(|error| {
        eprintln!("{error}");
        std::process::exit(1);
    });
    debug.index_all();
    if let Some(prefix) = name.strip_suffix('*') {
        for found in debug.type_names_with_prefix(prefix) {
            println!("{found}");
        }
        return;
    }
    let Some(die) = debug.type_by_name(name, None) else {
        eprintln!("no type {name} in {binary}");
        std::process::exit(1);
    };
    print_type(&debug, die, 0, 0, depth);
}

fn print_type(debug: &DebugInfo, die: DieRef, at: u64, indent: usize, depth: usize) {
    let Ok(info) = debug.type_info(die) else {
        return;
    };
    let pad = "  ".repeat(indent);
    println!(
        "{pad}{:#06x} {} ({:?}, {} bytes)",
        at,
        info.name,
        info.tag,
        info.size.unwrap_or(0)
    );
    if indent >= depth {
        return;
    }
    for field in &info.fields {
        println!("{pad}  .{} @ +{:#x}", field.name, field.offset);
        if let Some(ty) = field.ty {
            print_type(debug, ty, at + field.offset, indent + 2, depth);
        }
    }
    if let Some(part) = &info.variant_part {
        if let Some(discriminant) = &part.discriminant {
            println!(
                "{pad}  discriminant `{}` @ +{:#x}",
                discriminant.name, discriminant.offset
            );
        }
        for variant in &part.variants {
            println!(
                "{pad}  variant {} (discriminant {:?})",
                variant.member.name, variant.discr_value
            );
            if let Some(ty) = variant.member.ty {
                print_type(debug, ty, at + variant.member.offset, indent + 2, depth);
            }
        }
    }
    for (name, value) in &info.enumerators {
        println!("{pad}  = {name} ({value})");
    }
}
