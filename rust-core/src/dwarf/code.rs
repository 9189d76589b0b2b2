//! What code is at an address: the subprogram containing it and the chain of inlined
//! functions at that point, each with its qualified DWARF path and template parameters.

use gimli::constants;

use super::{types, DebugInfo, DieRef, Reader, UnitView};
use crate::error::Result;

/// One function active at an address (the subprogram itself or an inlined call in it).
#[derive(Debug, Clone)]
pub struct FunctionAt {
    /// As DWARF names it, generics included: `tokio::runtime::park::CachedParkThread::block_on<F>`.
    pub path: String,
    /// The DIE that carries the name and template parameters.
    pub die: DieRef,
    /// The DIE of this copy's code: the subprogram, or the inlined subroutine (whose
    /// parameters have this copy's locations).
    pub code: DieRef,
}

/// How deep inlined calls may nest before we stop looking.
const MAX_INLINE_DEPTH: u32 = 64;

impl DebugInfo {
    /// Functions active at `address` (unbiased), outermost first.
    pub fn functions_at(&self, address: u64) -> Result<Vec<FunctionAt>> {
        let Some(subprogram) = self.subprogram_containing(address) else {
            return Ok(Vec::new());
        };
        let mut chain = Vec::new();
        if let Some(function) = self.function_of(subprogram, subprogram) {
            chain.push(function);
        }
        let (unit, offset) = self.unit_of(subprogram)?;
        let mut tree = unit.entries_tree(Some(offset))?;
        let root = tree.root()?;
        self.collect_inlined(unit, root, address, &mut chain, 0)?;
        Ok(chain)
    }

    /// Template type parameters of a function DIE (following its origin).
    pub fn function_template_params(&self, die: DieRef) -> Result<Vec<(String, DieRef)>> {
        types::template_params_of_subprogram(self, die)
    }

    fn function_of(&self, die: DieRef, code: DieRef) -> Option<FunctionAt> {
        self.subprogram_path(die).map(|(path, named)| FunctionAt {
            path: path.to_string(),
            die: named,
            code,
        })
    }

    fn collect_inlined(
        &self,
        unit: UnitView<'_>,
        node: gimli::EntriesTreeNode<'_, '_, Reader>,
        address: u64,
        chain: &mut Vec<FunctionAt>,
        depth: u32,
    ) -> Result<()> {
        if depth > MAX_INLINE_DEPTH {
            return Ok(());
        }
        let mut children = node.children();
        while let Some(child) = children.next()? {
            let entry = child.entry();
            let tag = entry.tag();
            if tag != constants::DW_TAG_inlined_subroutine && tag != constants::DW_TAG_lexical_block
            {
                continue;
            }
            let ranges = unit.code_ranges(entry);
            let covers = ranges
                .iter()
                .any(|&(start, end)| start <= address && address < end);
            if tag == constants::DW_TAG_lexical_block {
                if covers {
                    return self.collect_inlined(unit, child, address, chain, depth + 1);
                }
                if ranges.is_empty() {
                    // A block without code of its own may still hold inlined calls.
                    let before = chain.len();
                    self.collect_inlined(unit, child, address, chain, depth + 1)?;
                    if chain.len() > before {
                        return Ok(());
                    }
                }
                continue;
            }
            if covers {
                let origin = entry
                    .attr_value(constants::DW_AT_abstract_origin)
                    .and_then(|value| unit.attr_die(value));
                let code = unit.die(child.entry().offset());
                if let Some(function) = origin.and_then(|origin| self.function_of(origin, code)) {
                    chain.push(function);
                }
                return self.collect_inlined(unit, child, address, chain, depth + 1);
            }
        }
        Ok(())
    }
}
