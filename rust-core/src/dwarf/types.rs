//! Type layouts parsed from DWARF: structs with their fields, Rust enums with their variant
//! parts, pointers with their targets. Offsets always come from here.

use std::sync::{Arc, OnceLock};

use gimli::{constants, AttributeValue};

use super::{DebugInfo, DieRef, Reader, UnitView};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeTag {
    Struct,
    Union,
    /// A C-like enumeration (`DW_TAG_enumeration_type`).
    Enumeration,
    Base,
    Pointer,
    Array,
    Other,
}

/// `DW_AT_decl_file` + `DW_AT_decl_line` of a DIE.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceLocation {
    pub file: String,
    pub line: u64,
}

#[derive(Debug, Clone)]
pub struct Field {
    pub name: String,
    pub offset: u64,
    pub ty: Option<DieRef>,
    pub decl: Option<SourceLocation>,
    /// `ty`'s layout once a value's field was first read (`DebugInfo::field_type`): a
    /// million reads of the same field find it here, not in the shared cache.
    pub(super) resolved: ResolvedType,
}

/// A field's type, resolved on first use; shown as a mark, not as the whole layout.
#[derive(Clone, Default)]
pub(super) struct ResolvedType(pub(super) OnceLock<Arc<TypeInfo>>);

impl std::fmt::Debug for ResolvedType {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let resolved = if self.0.get().is_some() {
            "resolved"
        } else {
            "not resolved"
        };
        formatter.write_str(resolved)
    }
}

#[derive(Debug, Clone)]
pub struct Variant {
    /// `None` for the dataful variant of a niche-encoded enum.
    pub discr_value: Option<u64>,
    pub member: Field,
}

#[derive(Debug, Clone)]
pub struct VariantPart {
    pub discriminant: Option<Field>,
    pub variants: Vec<Variant>,
}

#[derive(Debug, Clone)]
pub struct TypeInfo {
    pub die: DieRef,
    /// Fully qualified for named aggregates (`tokio::runtime::task::core::Header`);
    /// as written for pointers and base types (`*mut u8`, `u64`).
    pub name: String,
    pub tag: TypeTag,
    pub size: Option<u64>,
    pub fields: Vec<Field>,
    pub variant_part: Option<VariantPart>,
    /// The pointee of a pointer, the element of an array.
    pub target: Option<DieRef>,
    pub template_params: Vec<(String, DieRef)>,
    pub enumerators: Vec<(String, u64)>,
    /// For `{vtable_type}` structs: the concrete type the vtable belongs to.
    pub containing_type: Option<DieRef>,
    /// For arrays: how many elements (`DW_TAG_subrange_type`'s count or upper bound + 1).
    pub array_len: Option<u64>,
}

impl TypeInfo {
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|field| field.name == name)
    }

    pub fn template_param(&self, name: &str) -> Option<DieRef> {
        self.template_params
            .iter()
            .find(|(param, _)| param == name)
            .map(|(_, die)| *die)
    }
}

const MAX_TYPEDEF_CHAIN: u32 = 16;

pub(super) fn parse_type(debug: &DebugInfo, die: DieRef, chain: u32) -> Result<TypeInfo> {
    if chain > MAX_TYPEDEF_CHAIN {
        return Err(Error::layout(format!(
            "typedef chain too long at DIE {:#x}",
            die.0
        )));
    }
    let (unit, offset) = debug.unit_of(die)?;
    let entry = unit.entry(offset)?;
    let tag = match entry.tag() {
        constants::DW_TAG_typedef
        | constants::DW_TAG_const_type
        | constants::DW_TAG_volatile_type => {
            let target = type_attr(unit, &entry)
                .ok_or_else(|| Error::layout(format!("qualifier DIE {:#x} has no type", die.0)))?;
            return parse_type(debug, target, chain + 1);
        }
        constants::DW_TAG_structure_type => TypeTag::Struct,
        constants::DW_TAG_union_type => TypeTag::Union,
        constants::DW_TAG_enumeration_type => TypeTag::Enumeration,
        constants::DW_TAG_base_type => TypeTag::Base,
        constants::DW_TAG_pointer_type | constants::DW_TAG_reference_type => TypeTag::Pointer,
        constants::DW_TAG_array_type => TypeTag::Array,
        _ => TypeTag::Other,
    };
    let own_name = entry
        .attr_value(constants::DW_AT_name)
        .and_then(|value| unit.attr_string(value));
    let name = debug
        .indexed_type_name(die)
        .map(str::to_string)
        .or(own_name)
        .unwrap_or_else(|| "<anonymous>".to_string());
    let size = entry
        .attr_value(constants::DW_AT_byte_size)
        .and_then(|value| value.udata_value());
    let mut info = TypeInfo {
        die,
        name,
        tag,
        size,
        fields: Vec::new(),
        variant_part: None,
        target: type_attr(unit, &entry),
        template_params: Vec::new(),
        enumerators: Vec::new(),
        containing_type: entry
            .attr_value(constants::DW_AT_containing_type)
            .and_then(|value| unit.attr_die(value)),
        array_len: None,
    };
    if info.tag == TypeTag::Pointer && info.size.is_none() {
        info.size = Some(unit.encoding().address_size as u64);
    }
    if !entry.has_children() {
        return Ok(info);
    }
    add_children(unit, offset, &mut info)?;
    Ok(info)
}

/// A type's members, variant part, template parameters, array bound and enumerators.
fn add_children(
    unit: UnitView<'_>,
    offset: gimli::UnitOffset<usize>,
    info: &mut TypeInfo,
) -> Result<()> {
    let mut tree = unit.entries_tree(Some(offset))?;
    let root = tree.root()?;
    let mut children = root.children();
    while let Some(child) = children.next()? {
        let child_entry = child.entry();
        match child_entry.tag() {
            constants::DW_TAG_member => {
                if let Some(field) = parse_member(unit, child_entry) {
                    info.fields.push(field);
                }
            }
            constants::DW_TAG_variant_part => {
                info.variant_part = Some(parse_variant_part(unit, child)?);
            }
            constants::DW_TAG_template_type_parameter => {
                if let Some(param) = parse_template_param(unit, child_entry) {
                    info.template_params.push(param);
                }
            }
            constants::DW_TAG_subrange_type => {
                let count = child_entry
                    .attr_value(constants::DW_AT_count)
                    .and_then(constant_value);
                let upper = child_entry
                    .attr_value(constants::DW_AT_upper_bound)
                    .and_then(constant_value);
                info.array_len = count.or_else(|| upper.and_then(|upper| upper.checked_add(1)));
            }
            constants::DW_TAG_enumerator => {
                let name = child_entry
                    .attr_value(constants::DW_AT_name)
                    .and_then(|v| unit.attr_string(v));
                let value = child_entry
                    .attr_value(constants::DW_AT_const_value)
                    .and_then(constant_value);
                if let (Some(name), Some(value)) = (name, value) {
                    info.enumerators.push((name, value));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn parse_variant_part(
    unit: UnitView<'_>,
    node: gimli::EntriesTreeNode<'_, '_, Reader>,
) -> Result<VariantPart> {
    let discr_offset = match node.entry().attr_value(constants::DW_AT_discr) {
        Some(AttributeValue::UnitRef(offset)) => Some(offset),
        _ => None,
    };
    let mut part = VariantPart {
        discriminant: None,
        variants: Vec::new(),
    };
    let mut children = node.children();
    while let Some(child) = children.next()? {
        let entry = child.entry();
        match entry.tag() {
            constants::DW_TAG_member
                if Some(entry.offset()) == discr_offset || part.discriminant.is_none() =>
            {
                part.discriminant = parse_member(unit, entry);
            }
            constants::DW_TAG_variant => {
                let discr_value = entry
                    .attr_value(constants::DW_AT_discr_value)
                    .and_then(constant_value);
                let mut members = child.children();
                while let Some(member) = members.next()? {
                    if member.entry().tag() == constants::DW_TAG_member {
                        if let Some(field) = parse_member(unit, member.entry()) {
                            part.variants.push(Variant {
                                discr_value,
                                member: field,
                            });
                        }
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    Ok(part)
}

fn parse_member(
    unit: UnitView<'_>,
    entry: &gimli::DebuggingInformationEntry<Reader>,
) -> Option<Field> {
    let name = entry
        .attr_value(constants::DW_AT_name)
        .and_then(|value| unit.attr_string(value))
        .unwrap_or_default();
    let offset = match entry.attr_value(constants::DW_AT_data_member_location) {
        Some(value) => value.udata_value()?,
        None => 0,
    };
    let decl = match (
        entry
            .attr_value(constants::DW_AT_decl_file)
            .and_then(|v| match v {
                AttributeValue::FileIndex(index) => Some(index),
                other => other.udata_value(),
            }),
        entry
            .attr_value(constants::DW_AT_decl_line)
            .and_then(|v| v.udata_value()),
    ) {
        (Some(file), Some(line)) => unit
            .file_name(file)
            .map(|file| SourceLocation { file, line }),
        _ => None,
    };
    Some(Field {
        name,
        offset,
        ty: type_attr(unit, entry),
        decl,
        resolved: ResolvedType::default(),
    })
}

fn parse_template_param(
    unit: UnitView<'_>,
    entry: &gimli::DebuggingInformationEntry<Reader>,
) -> Option<(String, DieRef)> {
    let name = entry
        .attr_value(constants::DW_AT_name)
        .and_then(|value| unit.attr_string(value))?;
    Some((name, type_attr(unit, entry)?))
}

fn type_attr(
    unit: UnitView<'_>,
    entry: &gimli::DebuggingInformationEntry<Reader>,
) -> Option<DieRef> {
    entry
        .attr_value(constants::DW_AT_type)
        .and_then(|value| unit.attr_die(value))
}

fn constant_value(value: AttributeValue<Reader>) -> Option<u64> {
    match value {
        AttributeValue::Sdata(v) => Some(v as u64),
        AttributeValue::Data1(v) => Some(v as u64),
        AttributeValue::Data2(v) => Some(v as u64),
        AttributeValue::Data4(v) => Some(v as u64),
        AttributeValue::Data8(v) => Some(v),
        AttributeValue::Udata(v) => Some(v),
        other => other.udata_value(),
    }
}

/// Template type parameters of a subprogram, following `DW_AT_specification` and
/// `DW_AT_abstract_origin` (release builds put them on the declaration).
pub(super) fn template_params_of_subprogram(
    debug: &DebugInfo,
    die: DieRef,
) -> Result<Vec<(String, DieRef)>> {
    let mut current = die;
    for _ in 0..4 {
        let (unit, offset) = debug.unit_of(current)?;
        let mut params = Vec::new();
        let mut tree = unit.entries_tree(Some(offset))?;
        let root = tree.root()?;
        let origin = unit.origin_of(root.entry());
        let mut children = root.children();
        while let Some(child) = children.next()? {
            if child.entry().tag() == constants::DW_TAG_template_type_parameter {
                if let Some(param) = parse_template_param(unit, child.entry()) {
                    params.push(param);
                }
            }
        }
        if !params.is_empty() {
            return Ok(params);
        }
        match origin {
            Some(next) => current = next,
            None => break,
        }
    }
    Ok(Vec::new())
}
