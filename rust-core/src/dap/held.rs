//! The values a task's frame holds across its await, made expandable as the adapter's own
//! variables are: each held local whose value the report does not spell (a struct, an
//! `Arc`, a guard) is made a value of the debugger's own, named by a persistent variable
//! for the stop (the glue's `persist_values`: the type by name, the value read where the
//! local lies, nothing written), and that name is evaluated in the adapter, whose answer
//! carries its own `variablesReference`. The editor then expands it through the adapter,
//! with its formatting, as any of its variables.

use serde_json::Value;

use super::tasks::Variable;

/// The glue function that makes the values (python/tokio_async_glue/lldb_adapter.py).
const PERSIST: &str = "import tokio_async_glue.lldb_adapter as glue; glue.persist_values";

/// One `variables` request of a task frame's scope, while the adapter makes its values.
pub struct HeldVariables {
    /// The editor's request, answered once every value is made (or could not be).
    pub request: Value,
    /// The coroutine keeping them: its type, address and await point.
    pub holder: Option<(String, u64, u64)>,
    pub variables: Vec<Variable>,
    /// The variables being made expandable (indices into `variables`), in the order the
    /// script was asked for them.
    pub asked: Vec<usize>,
    /// Evaluations of their names still unanswered.
    pub unanswered: usize,
}

impl HeldVariables {
    pub fn new(
        request: Value,
        holder: Option<(String, u64, u64)>,
        variables: Vec<Variable>,
    ) -> Self {
        // What the report spells (numbers, strings, `None`) is shown as it is.
        let asked = variables
            .iter()
            .enumerate()
            .filter(|(_, variable)| !variable.spelled)
            .map(|(index, _)| index)
            .collect();
        HeldVariables {
            request,
            holder,
            variables,
            asked,
            unanswered: 0,
        }
    }

    /// The script command (a REPL line) that makes the asked variables' values: for
    /// each, the holder (its type, address and await point), and the local's name,
    /// address and type.
    pub fn script(&self) -> String {
        let (holder_type, holder_address, await_point) = match &self.holder {
            Some((name, address, await_point)) => (name.as_str(), *address, *await_point),
            None => ("", 0, 0),
        };
        let spec: Vec<(&str, u64, u64, &str, u64, &str)> = self
            .asked
            .iter()
            .map(|&index| {
                let variable = &self.variables[index];
                let address =
                    u64::from_str_radix(variable.memory_reference.trim_start_matches("0x"), 16)
                        .unwrap_or_default();
                (
                    holder_type,
                    holder_address,
                    await_point,
                    variable.name.as_str(),
                    address,
                    variable.type_name.as_str(),
                )
            })
            .collect();
        let json = serde_json::to_string(&spec).unwrap_or_default();
        // A JSON string is a Python string literal too.
        let literal = serde_json::to_string(&json).unwrap_or_default();
        format!("script {PERSIST}(lldb.debugger, {literal})")
    }

    /// The names the script printed (its last line, a JSON list, `null` where a value
    /// could not be made), paired with the variables they name.
    pub fn names(&self, output: &str) -> Vec<(usize, String)> {
        let names: Vec<Option<String>> = output
            .lines()
            .rev()
            .find_map(|line| serde_json::from_str(line.trim()).ok())
            .unwrap_or_default();
        self.asked
            .iter()
            .zip(names)
            .filter_map(|(&index, name)| Some((index, name?)))
            .collect()
    }

    /// Takes the adapter's answer to the evaluation of variable `index`'s name.
    pub fn evaluated(&mut self, index: usize, response: &Value) {
        self.unanswered = self.unanswered.saturating_sub(1);
        let reference = response["body"]["variablesReference"].as_u64();
        if let (true, Some(reference), Some(variable)) = (
            response["success"] == true,
            reference.filter(|&reference| reference > 0),
            self.variables.get_mut(index),
        ) {
            variable.variables_reference = reference;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn variable(name: &str, type_name: &str, spelled: Option<&str>) -> Variable {
        Variable {
            name: name.into(),
            value: spelled.unwrap_or("held").into(),
            type_name: type_name.into(),
            variables_reference: 0,
            memory_reference: "0x55555576d338".into(),
            spelled: spelled.is_some(),
        }
    }

    /// Only what the report does not spell is made; quotes in type names survive the
    /// trip through a Python literal; the printed names pair with their variables, and
    /// the adapter's references land on them.
    #[test]
    fn unspelled_values_are_made_and_take_the_adapters_references() {
        let variables = vec![
            variable("count", "u32", Some("3")),
            variable(
                "notified",
                "alloc::sync::Arc<tokio::sync::notify::Notify>",
                None,
            ),
            variable("name", "&'static str", None),
        ];
        let holder = Some(("app::level1::{async_fn_env#0}".to_string(), 0x10, 2));
        let mut held = HeldVariables::new(Value::Null, holder, variables);
        assert_eq!(held.asked, [1, 2]);
        let script = held.script();
        assert_eq!(
            script,
            "script import tokio_async_glue.lldb_adapter as glue; glue.persist_values(lldb.debugger, \
             \"[[\\\"app::level1::{async_fn_env#0}\\\",16,2,\\\"notified\\\",93824994431800,\
             \\\"alloc::sync::Arc<tokio::sync::notify::Notify>\\\"],[\\\"app::level1::{async_fn_env#0}\\\",\
             16,2,\\\"name\\\",93824994431800,\\\"&'static str\\\"]]\")"
        );
        assert_eq!(
            held.names("some output\n[\"$3\", null]\n"),
            [(1, "$3".to_string())]
        );
        assert!(held.names("no list printed").is_empty());
        held.unanswered = 1;
        let answer = serde_json::json!({"success": true, "body": {"result": "{...}", "variablesReference": 7}});
        held.evaluated(1, &answer);
        assert_eq!(held.unanswered, 0);
        assert_eq!(held.variables[1].variables_reference, 7);
        // A failed evaluation leaves the variable as the report shows it.
        held.evaluated(2, &serde_json::json!({"success": false}));
        assert_eq!(held.variables[2].variables_reference, 0);
    }
}
