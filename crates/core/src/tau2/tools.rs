//! The 16 tools of tau2's retail domain (`RetailTools`), with the descriptions and JSON-schema
//! parameters tau2 gives the model, and [`call`], which answers a tool call as tau2's
//! `Environment.get_response` does: the same content (JSON as `to_json_str` writes it, or the
//! tool's text), the same `Error: ...` messages, the same changes to the database.
//!
//! tau2 calls the Python method with the model's arguments as they are (no validation), so a
//! wrongly typed argument fails the way Python fails on it (`unhashable type: 'list'`,
//! `'int' object is not iterable`, `Order not found` for a number, ...), and an address is
//! validated by pydantic (`1 validation error for UserAddress ...`). This module reproduces
//! those answers for every JSON value.

use super::calc;
use super::db::{Address, Db, OrderPayment, OrderStatus, PaymentMethod, PyNumber, TransactionType};
use super::py;
use indexmap::IndexMap;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// tau2's classification of a tool (its `ToolType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// Reads the database.
    Read,
    /// Changes the database.
    Write,
    /// Neither (`calculate`, `transfer_to_human_agents`).
    Generic,
}

/// A tool as tau2 exposes it to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSpec {
    /// The function name.
    pub name: &'static str,
    /// tau2's classification.
    pub kind: ToolKind,
    /// Whether calling it can change the database (tau2 replays only these when grading).
    pub mutates: bool,
    /// The description from the docstring, as tau2's docstring parsing gives it.
    pub description: &'static str,
    /// The parameters in signature order (all required).
    pub parameters: &'static [&'static str],
    /// The JSON schema of the parameters (pydantic's `model_json_schema`), compact, in
    /// tau2's key order.
    pub parameters_json: &'static str,
}

impl ToolSpec {
    /// The JSON schema of the parameters.
    pub fn parameters_schema(&self) -> Value {
        serde_json::from_str(self.parameters_json).unwrap_or(Value::Null)
    }

    /// The tool in the OpenAI function-calling shape tau2 sends (`Tool.openai_schema`):
    /// `{"type": "function", "function": {"name", "description", "parameters"}}`.
    pub fn openai_schema(&self) -> Value {
        serde_json::json!({
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters_schema(),
            }
        })
    }

    /// [`ToolSpec::openai_schema`] as JSON text with tau2's key order kept.
    pub fn openai_schema_json(&self) -> String {
        format!(
            r#"{{"type":"function","function":{{"name":{},"description":{},"parameters":{}}}}}"#,
            serde_json::Value::String(self.name.into()),
            serde_json::Value::String(self.description.into()),
            self.parameters_json
        )
    }
}

/// What a tool call gives back: the content the model sees and whether it is an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    /// The tool message's content.
    pub content: String,
    /// Whether the call raised (the content then starts with `Error: `).
    pub error: bool,
}

/// The 16 tools, in tau2's order.
pub static TOOLS: [ToolSpec; 16] = [
    ToolSpec {
        name: "calculate",
        kind: ToolKind::Generic,
        mutates: false,
        description: "Calculate the result of a mathematical expression.",
        parameters: &["expression"],
        parameters_json: r##"{"properties":{"expression":{"description":"The mathematical expression to calculate, such as '2 + 2'. The expression can contain numbers, operators (+, -, *, /), parentheses, and spaces.","title":"Expression","type":"string"}},"required":["expression"],"title":"parameters","type":"object"}"##,
    },
    ToolSpec {
        name: "cancel_pending_order",
        kind: ToolKind::Write,
        mutates: true,
        description: "Cancel a pending order. If the order is already processed or delivered,\n\nit cannot be cancelled. The agent needs to explain the cancellation detail\nand ask for explicit user confirmation (yes/no) to proceed. If the user confirms,\nthe order status will be changed to 'cancelled' and the payment will be refunded.\nThe refund will be added to the user's gift card balance immediately if the payment\nwas made using a gift card, otherwise the refund would take 5-7 business days to process.\nThe function returns the order details after the cancellation.",
        parameters: &["order_id", "reason"],
        parameters_json: r##"{"properties":{"order_id":{"description":"The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.","title":"Order Id","type":"string"},"reason":{"description":"The reason for cancellation, which should be either 'no longer needed' or 'ordered by mistake'.","title":"Reason","type":"string"}},"required":["order_id","reason"],"title":"parameters","type":"object"}"##,
    },
    ToolSpec {
        name: "exchange_delivered_order_items",
        kind: ToolKind::Write,
        mutates: true,
        description: "Exchange items in a delivered order to new items of the same product type.\n\nFor a delivered order, return or exchange can be only done once by the agent.\nThe agent needs to explain the exchange detail and ask for explicit user confirmation (yes/no) to proceed.",
        parameters: &["order_id", "item_ids", "new_item_ids", "payment_method_id"],
        parameters_json: r##"{"properties":{"order_id":{"description":"The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.","title":"Order Id","type":"string"},"item_ids":{"description":"The item ids to be exchanged, each such as '1008292230'. There could be duplicate items in the list.","items":{"type":"string"},"title":"Item Ids","type":"array"},"new_item_ids":{"description":"The item ids to be exchanged for, each such as '1008292230'.\nThere could be duplicate items in the list. Each new item id should match the item id\nin the same position and be of the same product.","items":{"type":"string"},"title":"New Item Ids","type":"array"},"payment_method_id":{"description":"The payment method id to pay or receive refund for the item price difference,\nsuch as 'gift_card_0000000' or 'credit_card_0000000'. These can be looked up\nfrom the user or order details.","title":"Payment Method Id","type":"string"}},"required":["order_id","item_ids","new_item_ids","payment_method_id"],"title":"parameters","type":"object"}"##,
    },
    ToolSpec {
        name: "find_user_id_by_name_zip",
        kind: ToolKind::Read,
        mutates: false,
        description: "Find user id by first name, last name, and zip code. If the user is not found, the function\n\nwill return an error message. By default, find user id by email, and only call this function\nif the user is not found by email or cannot remember email.",
        parameters: &["first_name", "last_name", "zip"],
        parameters_json: r##"{"properties":{"first_name":{"description":"The first name of the customer, such as 'John'.","title":"First Name","type":"string"},"last_name":{"description":"The last name of the customer, such as 'Doe'.","title":"Last Name","type":"string"},"zip":{"description":"The zip code of the customer, such as '12345'.","title":"Zip","type":"string"}},"required":["first_name","last_name","zip"],"title":"parameters","type":"object"}"##,
    },
    ToolSpec {
        name: "find_user_id_by_email",
        kind: ToolKind::Read,
        mutates: false,
        description: "Find user id by email. If the user is not found, the function will return an error message.",
        parameters: &["email"],
        parameters_json: r##"{"properties":{"email":{"description":"The email of the user, such as 'something@example.com'.","title":"Email","type":"string"}},"required":["email"],"title":"parameters","type":"object"}"##,
    },
    ToolSpec {
        name: "get_order_details",
        kind: ToolKind::Read,
        mutates: false,
        description: "Get the status and details of an order.",
        parameters: &["order_id"],
        parameters_json: r##"{"properties":{"order_id":{"description":"The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.","title":"Order Id","type":"string"}},"required":["order_id"],"title":"parameters","type":"object"}"##,
    },
    ToolSpec {
        name: "get_product_details",
        kind: ToolKind::Read,
        mutates: false,
        description: "Get the inventory details of a product.",
        parameters: &["product_id"],
        parameters_json: r##"{"properties":{"product_id":{"description":"The product id, such as '6086499569'. Be careful the product id is different from the item id.","title":"Product Id","type":"string"}},"required":["product_id"],"title":"parameters","type":"object"}"##,
    },
    ToolSpec {
        name: "get_item_details",
        kind: ToolKind::Read,
        mutates: false,
        description: "Get the inventory details of an item.",
        parameters: &["item_id"],
        parameters_json: r##"{"properties":{"item_id":{"description":"The item id, such as '6086499569'. Be careful the item id is different from the product id.","title":"Item Id","type":"string"}},"required":["item_id"],"title":"parameters","type":"object"}"##,
    },
    ToolSpec {
        name: "get_user_details",
        kind: ToolKind::Read,
        mutates: false,
        description: "Get the details of a user, including their orders.",
        parameters: &["user_id"],
        parameters_json: r##"{"properties":{"user_id":{"description":"The user id, such as 'sara_doe_496'.","title":"User Id","type":"string"}},"required":["user_id"],"title":"parameters","type":"object"}"##,
    },
    ToolSpec {
        name: "list_all_product_types",
        kind: ToolKind::Read,
        mutates: false,
        description: "List the name and product id of all product types.\n\nEach product type has a variety of different items with unique item ids and options.\nThere are only 50 product types in the store.",
        parameters: &[],
        parameters_json: r##"{"properties":{},"title":"parameters","type":"object"}"##,
    },
    ToolSpec {
        name: "modify_pending_order_address",
        kind: ToolKind::Write,
        mutates: true,
        description: "Modify the shipping address of a pending order. The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.",
        parameters: &[
            "order_id", "address1", "address2", "city", "state", "country", "zip",
        ],
        parameters_json: r##"{"properties":{"order_id":{"description":"The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.","title":"Order Id","type":"string"},"address1":{"description":"The first line of the address, such as '123 Main St'.","title":"Address1","type":"string"},"address2":{"description":"The second line of the address, such as 'Apt 1' or ''.","title":"Address2","type":"string"},"city":{"description":"The city, such as 'San Francisco'.","title":"City","type":"string"},"state":{"description":"The state, such as 'CA'.","title":"State","type":"string"},"country":{"description":"The country, such as 'USA'.","title":"Country","type":"string"},"zip":{"description":"The zip code, such as '12345'.","title":"Zip","type":"string"}},"required":["order_id","address1","address2","city","state","country","zip"],"title":"parameters","type":"object"}"##,
    },
    ToolSpec {
        name: "modify_pending_order_items",
        kind: ToolKind::Write,
        mutates: true,
        description: "Modify items in a pending order to new items of the same product type. For a pending order, this function can only be called once. The agent needs to explain the exchange detail and ask for explicit user confirmation (yes/no) to proceed.",
        parameters: &["order_id", "item_ids", "new_item_ids", "payment_method_id"],
        parameters_json: r##"{"properties":{"order_id":{"description":"The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.","title":"Order Id","type":"string"},"item_ids":{"description":"The item ids to be modified, each such as '1008292230'. There could be duplicate items in the list.","items":{"type":"string"},"title":"Item Ids","type":"array"},"new_item_ids":{"description":"The item ids to be modified for, each such as '1008292230'. There could be duplicate items in the list. Each new item id should match the item id in the same position and be of the same product.","items":{"type":"string"},"title":"New Item Ids","type":"array"},"payment_method_id":{"description":"The payment method id to pay or receive refund for the item price difference, such as 'gift_card_0000000' or 'credit_card_0000000'. These can be looked up from the user or order details.","title":"Payment Method Id","type":"string"}},"required":["order_id","item_ids","new_item_ids","payment_method_id"],"title":"parameters","type":"object"}"##,
    },
    ToolSpec {
        name: "modify_pending_order_payment",
        kind: ToolKind::Write,
        mutates: true,
        description: "Modify the payment method of a pending order. The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.",
        parameters: &["order_id", "payment_method_id"],
        parameters_json: r##"{"properties":{"order_id":{"description":"The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.","title":"Order Id","type":"string"},"payment_method_id":{"description":"The payment method id to pay or receive refund for the item price difference, such as 'gift_card_0000000' or 'credit_card_0000000'. These can be looked up from the user or order details.","title":"Payment Method Id","type":"string"}},"required":["order_id","payment_method_id"],"title":"parameters","type":"object"}"##,
    },
    ToolSpec {
        name: "modify_user_address",
        kind: ToolKind::Write,
        mutates: true,
        description: "Modify the default address of a user. The agent needs to explain the modification detail and ask for explicit user confirmation (yes/no) to proceed.",
        parameters: &[
            "user_id", "address1", "address2", "city", "state", "country", "zip",
        ],
        parameters_json: r##"{"properties":{"user_id":{"description":"The user id, such as 'sara_doe_496'.","title":"User Id","type":"string"},"address1":{"description":"The first line of the address, such as '123 Main St'.","title":"Address1","type":"string"},"address2":{"description":"The second line of the address, such as 'Apt 1' or ''.","title":"Address2","type":"string"},"city":{"description":"The city, such as 'San Francisco'.","title":"City","type":"string"},"state":{"description":"The state, such as 'CA'.","title":"State","type":"string"},"country":{"description":"The country, such as 'USA'.","title":"Country","type":"string"},"zip":{"description":"The zip code, such as '12345'.","title":"Zip","type":"string"}},"required":["user_id","address1","address2","city","state","country","zip"],"title":"parameters","type":"object"}"##,
    },
    ToolSpec {
        name: "return_delivered_order_items",
        kind: ToolKind::Write,
        mutates: true,
        description: "Return some items of a delivered order.\n\nThe order status will be changed to 'return requested'.\nThe agent needs to explain the return detail and ask for explicit user confirmation (yes/no) to proceed.\nThe user will receive follow-up email for how and where to return the item.",
        parameters: &["order_id", "item_ids", "payment_method_id"],
        parameters_json: r##"{"properties":{"order_id":{"description":"The order id, such as '#W0000000'. Be careful there is a '#' symbol at the beginning of the order id.","title":"Order Id","type":"string"},"item_ids":{"description":"The item ids to be returned, each such as '1008292230'. There could be duplicate items in the list.","items":{"type":"string"},"title":"Item Ids","type":"array"},"payment_method_id":{"description":"The payment method id to pay or receive refund for the item price difference, such as 'gift_card_0000000' or 'credit_card_0000000'.\nThese can be looked up from the user or order details.","title":"Payment Method Id","type":"string"}},"required":["order_id","item_ids","payment_method_id"],"title":"parameters","type":"object"}"##,
    },
    ToolSpec {
        name: "transfer_to_human_agents",
        kind: ToolKind::Generic,
        mutates: false,
        description: "Transfer the user to a human agent, with a summary of the user's issue.\n\nOnly transfer if\n -  the user explicitly asks for a human agent\n -  given the policy and the available tools, you cannot solve the user's issue.",
        parameters: &["summary"],
        parameters_json: r##"{"properties":{"summary":{"description":"A summary of the user's issue.","title":"Summary","type":"string"}},"required":["summary"],"title":"parameters","type":"object"}"##,
    },
];

/// The tools, in tau2's order.
pub fn tools() -> &'static [ToolSpec] {
    &TOOLS
}

/// The tool of a name.
pub fn tool(name: &str) -> Option<&'static ToolSpec> {
    TOOLS.iter().find(|t| t.name == name)
}

/// Whether tau2 replays calls of this tool when it grades (a known tool that mutates).
pub fn is_mutating(name: &str) -> bool {
    tool(name).is_some_and(|t| t.mutates)
}

/// Answers a tool call as tau2's `Environment.get_response` does, changing `db` as the tool
/// does (also when it fails part-way, as Python's tools do). `arguments` is the JSON object
/// of the call's arguments; anything else is an error answer.
pub fn call(db: &mut Db, name: &str, arguments: &Value) -> ToolOutput {
    match run(db, name, arguments) {
        Ok(content) => ToolOutput {
            content,
            error: false,
        },
        Err(message) => ToolOutput {
            content: format!("Error: {message}"),
            error: true,
        },
    }
}

fn run(db: &mut Db, name: &str, arguments: &Value) -> Result<String, String> {
    let Value::Object(args) = arguments else {
        return Err(format!(
            "the arguments must be a JSON object, not {}",
            py::type_name(arguments)
        ));
    };
    // Environment.make_tool_call(message.name, requestor=..., **message.arguments)
    if args.contains_key("requestor") {
        return Err("tau2.environment.environment.Environment.make_tool_call() got multiple values for keyword argument 'requestor'".into());
    }
    if let Some(k) = args.keys().find(|k| *k == "self" || *k == "tool_name") {
        return Err(format!(
            "Environment.make_tool_call() got multiple values for argument '{k}'"
        ));
    }
    let Some(spec) = tool(name) else {
        return Err(format!("Tool '{name}' not found."));
    };
    if let Some(k) = args.keys().find(|k| !spec.parameters.contains(&k.as_str())) {
        return Err(format!(
            "RetailTools.{name}() got an unexpected keyword argument '{k}'"
        ));
    }
    let missing: Vec<String> = spec
        .parameters
        .iter()
        .filter(|p| !args.contains_key(**p))
        .map(|p| format!("'{p}'"))
        .collect();
    if !missing.is_empty() {
        let list = match missing.len() {
            1 => missing[0].clone(),
            2 => format!("{} and {}", missing[0], missing[1]),
            n => format!("{}, and {}", missing[..n - 1].join(", "), missing[n - 1]),
        };
        return Err(format!(
            "RetailTools.{name}() missing {} required positional argument{}: {list}",
            missing.len(),
            if missing.len() == 1 { "" } else { "s" }
        ));
    }
    let a = |k: &str| &args[k];
    match name {
        "calculate" => calc::calculate(a("expression")),
        "cancel_pending_order" => cancel_pending_order(db, a("order_id"), a("reason")),
        "exchange_delivered_order_items" => exchange_delivered_order_items(
            db,
            a("order_id"),
            a("item_ids"),
            a("new_item_ids"),
            a("payment_method_id"),
        ),
        "find_user_id_by_name_zip" => {
            find_user_id_by_name_zip(db, a("first_name"), a("last_name"), a("zip"))
        }
        "find_user_id_by_email" => find_user_id_by_email(db, a("email")),
        "get_order_details" => {
            let i = order_index(db, a("order_id"))?;
            Ok(py::dumps(&db.orders[i]))
        }
        "get_product_details" => {
            let i = product_index(db, a("product_id"))?;
            Ok(py::dumps(&db.products[i]))
        }
        "get_item_details" => {
            let id = a("item_id");
            for product in db.products.values() {
                if let Some(v) = lookup(&product.variants, id)? {
                    return Ok(py::dumps(v));
                }
            }
            Err("Item not found".into())
        }
        "get_user_details" => {
            let i = user_index(db, a("user_id"))?;
            Ok(py::dumps(&db.users[i]))
        }
        "list_all_product_types" => {
            let names: BTreeMap<&str, &str> = db
                .products
                .values()
                .map(|p| (p.name.as_str(), p.product_id.as_str()))
                .collect();
            Ok(py::dumps(&names))
        }
        "modify_pending_order_address" => {
            let i = order_index(db, a("order_id"))?;
            if !db.orders[i].status.is_pending_like() {
                return Err("Non-pending order cannot be modified".into());
            }
            let address = user_address(args)?;
            db.orders[i].address = address;
            Ok(py::dumps(&db.orders[i]))
        }
        "modify_pending_order_items" => modify_pending_order_items(
            db,
            a("order_id"),
            a("item_ids"),
            a("new_item_ids"),
            a("payment_method_id"),
        ),
        "modify_pending_order_payment" => {
            modify_pending_order_payment(db, a("order_id"), a("payment_method_id"))
        }
        "modify_user_address" => {
            let i = user_index(db, a("user_id"))?;
            let address = user_address(args)?;
            db.users[i].address = address;
            Ok(py::dumps(&db.users[i]))
        }
        "return_delivered_order_items" => {
            return_delivered_order_items(db, a("order_id"), a("item_ids"), a("payment_method_id"))
        }
        "transfer_to_human_agents" => Ok("Transfer successful".into()),
        _ => Err(format!("Tool '{name}' not found.")),
    }
}

// ---------------------------------------------------------------------------------------------
// Python's dict lookups and iteration on JSON values

/// `key in map` / `map[key]` for a JSON key: a list or dict cannot be hashed; any other
/// non-string is simply absent.
fn lookup<'m, T>(map: &'m IndexMap<String, T>, key: &Value) -> Result<Option<&'m T>, String> {
    Ok(index_of(map, key)?.map(|i| &map[i]))
}

fn index_of<T>(map: &IndexMap<String, T>, key: &Value) -> Result<Option<usize>, String> {
    match key {
        Value::String(s) => Ok(map.get_index_of(s.as_str())),
        k if !py::hashable(k) => Err(format!("unhashable type: '{}'", py::type_name(k))),
        _ => Ok(None),
    }
}

fn order_index(db: &Db, id: &Value) -> Result<usize, String> {
    index_of(&db.orders, id)?.ok_or_else(|| "Order not found".into())
}

fn user_index(db: &Db, id: &Value) -> Result<usize, String> {
    index_of(&db.users, id)?.ok_or_else(|| "User not found".into())
}

fn product_index(db: &Db, id: &Value) -> Result<usize, String> {
    index_of(&db.products, id)?.ok_or_else(|| "Product not found".into())
}

/// `_get_payment_method(user_id, payment_method_id)`: (user index, method index).
fn payment_method_index(db: &Db, user_id: &str, pm: &Value) -> Result<(usize, usize), String> {
    let u = db
        .users
        .get_index_of(user_id)
        .ok_or_else(|| "User not found".to_string())?;
    let m = index_of(&db.users[u].payment_methods, pm)?
        .ok_or_else(|| "Payment method not found".to_string())?;
    Ok((u, m))
}

fn gift_card_balance(db: &mut Db, (u, m): (usize, usize)) -> Option<&mut f64> {
    match &mut db.users[u].payment_methods[m] {
        PaymentMethod::GiftCard { balance, .. } => Some(balance),
        _ => None,
    }
}

/// `iter(value)`: a list's items, a string's characters, a dict's keys.
fn py_iter(v: &Value) -> Result<Vec<Value>, String> {
    match v {
        Value::Array(items) => Ok(items.clone()),
        Value::String(s) => Ok(s.chars().map(|c| Value::String(c.into())).collect()),
        Value::Object(m) => Ok(m.keys().map(|k| Value::String(k.clone())).collect()),
        other => Err(format!("'{}' object is not iterable", py::type_name(other))),
    }
}

/// `len(value)`.
fn py_len(v: &Value) -> Result<usize, String> {
    match v {
        Value::Array(items) => Ok(items.len()),
        Value::String(s) => Ok(s.chars().count()),
        Value::Object(m) => Ok(m.len()),
        other => Err(format!(
            "object of type '{}' has no len()",
            py::type_name(other)
        )),
    }
}

/// `container.count(x)` where `x` came from iterating the container.
fn py_count(container: &Value, x: &Value) -> Result<usize, String> {
    match container {
        Value::Array(items) => Ok(items.iter().filter(|i| py::eq(i, x)).count()),
        Value::String(s) => Ok(match x {
            Value::String(c) if !c.is_empty() => s.matches(c.as_str()).count(),
            _ => 0,
        }),
        other => Err(format!(
            "'{}' object has no attribute 'count'",
            py::type_name(other)
        )),
    }
}

/// The duplicate-aware check of the item ids to change: every id at most as many times as
/// the order holds it. `message` makes the error for the first id that fails.
fn check_item_counts(
    item_ids: &Value,
    order_items: &[String],
    message: impl Fn(&Value) -> String,
) -> Result<Vec<Value>, String> {
    let iter = py_iter(item_ids)?;
    for x in &iter {
        let wanted = py_count(item_ids, x)?;
        let held = match x {
            Value::String(s) => order_items.iter().filter(|i| *i == s).count(),
            _ => 0,
        };
        if wanted > held {
            return Err(message(x));
        }
    }
    Ok(iter)
}

/// `sorted(ids)` of ids that have passed the checks (strings).
fn sorted_strings(ids: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = ids.iter().map(py::str_of).collect();
    out.sort();
    out
}

/// A new `UserAddress(...)`, validated by pydantic: every field must be a string.
fn user_address(args: &Map<String, Value>) -> Result<Address, String> {
    const FIELDS: [&str; 6] = ["address1", "address2", "city", "country", "state", "zip"];
    let mut errors = Vec::new();
    let mut values = Vec::new();
    for f in FIELDS {
        match &args[f] {
            Value::String(s) => values.push(s.clone()),
            other => {
                let repr = py::repr(other);
                let shown = if repr.len() > 50 {
                    let mut head = 25;
                    while !repr.is_char_boundary(head) {
                        head -= 1;
                    }
                    let mut tail = repr.len() - 24;
                    while !repr.is_char_boundary(tail) {
                        tail += 1;
                    }
                    format!("{}...{}", &repr[..head], &repr[tail..])
                } else {
                    repr
                };
                errors.push(format!(
                    "{f}\n  Input should be a valid string [type=string_type, input_value={shown}, input_type={}]\n    For further information visit https://errors.pydantic.dev/2.12/v/string_type",
                    py::type_name(other)
                ));
            }
        }
    }
    if !errors.is_empty() {
        return Err(format!(
            "{} validation error{} for UserAddress\n{}",
            errors.len(),
            if errors.len() == 1 { "" } else { "s" },
            errors.join("\n")
        ));
    }
    let mut v = values.into_iter();
    let mut next = || v.next().unwrap_or_default();
    Ok(Address {
        address1: next(),
        address2: next(),
        city: next(),
        country: next(),
        state: next(),
        zip: next(),
    })
}

// ---------------------------------------------------------------------------------------------
// The tools

fn cancel_pending_order(db: &mut Db, order_id: &Value, reason: &Value) -> Result<String, String> {
    let o = order_index(db, order_id)?;
    if db.orders[o].status != OrderStatus::Pending {
        return Err("Non-pending order cannot be cancelled".into());
    }
    if !py::hashable(reason) {
        return Err(format!("unhashable type: '{}'", py::type_name(reason)));
    }
    let reason = match reason.as_str() {
        Some("no longer needed") => super::db::CancelReason::NoLongerNeeded,
        Some("ordered by mistake") => super::db::CancelReason::OrderedByMistake,
        _ => return Err("Invalid reason".into()),
    };
    let payments = db.orders[o].payment_history.clone();
    let order_user = db.orders[o].user_id.clone();
    let mut refunds = Vec::new();
    for payment in &payments {
        refunds.push(OrderPayment {
            transaction_type: TransactionType::Refund,
            amount: payment.amount,
            payment_method_id: payment.payment_method_id.clone(),
        });
        let u = user_index(db, &Value::String(order_user.clone()))?;
        let user_id = db.users[u].user_id.clone();
        let pm = payment_method_index(
            db,
            &user_id,
            &Value::String(payment.payment_method_id.clone()),
        )?;
        if let Some(balance) = gift_card_balance(db, pm) {
            *balance = py::round2(*balance + payment.amount);
        }
    }
    let order = &mut db.orders[o];
    order.status = OrderStatus::Cancelled;
    order.cancel_reason = Some(reason);
    order.payment_history.extend(refunds);
    Ok(py::dumps(&db.orders[o]))
}

/// The price difference of replacing items by variants: each old item, its new variant (the
/// checks in tau2's order), and the running sum (an int 0 until the first item).
struct Replacement {
    diff: PyNumber,
    /// Price and options of the last variant (tau2 gives every modified item these).
    last: Option<(f64, IndexMap<String, String>)>,
}

fn price_replacement(
    db: &Db,
    o: usize,
    item_ids: &[Value],
    new_item_ids: &[Value],
    forbid_same: bool,
) -> Result<Replacement, String> {
    let mut diff = PyNumber::Int(0);
    let mut last = None;
    for (item_id, new_item_id) in item_ids.iter().zip(new_item_ids) {
        if forbid_same && py::eq(item_id, new_item_id) {
            return Err("The new item id should be different from the old item id".into());
        }
        let item = db.orders[o]
            .items
            .iter()
            .find(|i| item_id.as_str() == Some(i.item_id.as_str()))
            .ok_or_else(|| format!("Item {} not found", py::str_of(item_id)))?;
        let p = db
            .products
            .get_index_of(item.product_id.as_str())
            .ok_or_else(|| "Product not found".to_string())?;
        let variant = lookup(&db.products[p].variants, new_item_id)?
            .ok_or_else(|| "Variant not found".to_string())?;
        if !variant.available {
            return Err(format!(
                "New item {} not found or available",
                py::str_of(new_item_id)
            ));
        }
        let step = variant.price - item.price;
        diff = PyNumber::Float(match diff {
            PyNumber::Int(i) => i as f64 + step,
            PyNumber::Float(x) => x + step,
        });
        last = Some((variant.price, variant.options.clone()));
    }
    Ok(Replacement { diff, last })
}

fn as_f64(n: PyNumber) -> f64 {
    match n {
        PyNumber::Int(i) => i as f64,
        PyNumber::Float(x) => x,
    }
}

fn exchange_delivered_order_items(
    db: &mut Db,
    order_id: &Value,
    item_ids: &Value,
    new_item_ids: &Value,
    payment_method_id: &Value,
) -> Result<String, String> {
    let o = order_index(db, order_id)?;
    if db.orders[o].status != OrderStatus::Delivered {
        return Err("Non-delivered order cannot be exchanged".into());
    }
    let held: Vec<String> = db.orders[o]
        .items
        .iter()
        .map(|i| i.item_id.clone())
        .collect();
    let old = check_item_counts(item_ids, &held, |x| {
        format!("Number of {} not found.", py::str_of(x))
    })?;
    if py_len(item_ids)? != py_len(new_item_ids)? {
        return Err("The number of items to be exchanged should match.".into());
    }
    let new = py_iter(new_item_ids)?;
    let r = price_replacement(db, o, &old, &new, false)?;
    let diff = match r.diff {
        PyNumber::Int(i) => PyNumber::Int(i),
        PyNumber::Float(x) => PyNumber::Float(py::round2(x)),
    };
    let user_id = db.orders[o].user_id.clone();
    let pm = payment_method_index(db, &user_id, payment_method_id)?;
    if let Some(balance) = gift_card_balance(db, pm)
        && *balance < as_f64(diff)
    {
        return Err("Insufficient gift card balance to pay for the price difference".into());
    }
    let order = &mut db.orders[o];
    order.status = OrderStatus::ExchangeRequested;
    order.exchange_items = Some(sorted_strings(&old));
    order.exchange_new_items = Some(sorted_strings(&new));
    order.exchange_payment_method_id = Some(py::str_of(payment_method_id));
    order.exchange_price_difference = Some(diff);
    Ok(py::dumps(&db.orders[o]))
}

fn modify_pending_order_items(
    db: &mut Db,
    order_id: &Value,
    item_ids: &Value,
    new_item_ids: &Value,
    payment_method_id: &Value,
) -> Result<String, String> {
    let o = order_index(db, order_id)?;
    if db.orders[o].status != OrderStatus::Pending {
        return Err("Non-pending order cannot be modified".into());
    }
    let held: Vec<String> = db.orders[o]
        .items
        .iter()
        .map(|i| i.item_id.clone())
        .collect();
    let old = check_item_counts(item_ids, &held, |x| format!("{} not found", py::str_of(x)))?;
    if py_len(item_ids)? != py_len(new_item_ids)? {
        return Err("The number of items to be exchanged should match".into());
    }
    let new = py_iter(new_item_ids)?;
    let r = price_replacement(db, o, &old, &new, true)?;
    let diff = as_f64(r.diff);
    let user_id = db.orders[o].user_id.clone();
    let pm = payment_method_index(db, &user_id, payment_method_id)?;
    if let Some(balance) = gift_card_balance(db, pm)
        && *balance < diff
    {
        return Err("Insufficient gift card balance to pay for the new item".into());
    }
    db.orders[o].payment_history.push(OrderPayment {
        transaction_type: if diff > 0.0 {
            TransactionType::Payment
        } else {
            TransactionType::Refund
        },
        amount: diff.abs(),
        payment_method_id: py::str_of(payment_method_id),
    });
    if let Some(balance) = gift_card_balance(db, pm) {
        *balance = py::round2(*balance - diff);
    }
    for (item_id, new_item_id) in old.iter().zip(&new) {
        let order = &mut db.orders[o];
        let item = order
            .items
            .iter_mut()
            .find(|i| item_id.as_str() == Some(i.item_id.as_str()))
            .ok_or_else(|| format!("Item {} not found", py::str_of(item_id)))?;
        item.item_id = py::str_of(new_item_id);
        if let Some((price, options)) = &r.last {
            item.price = *price;
            item.options = options.clone();
        }
    }
    db.orders[o].status = OrderStatus::PendingItemModified;
    Ok(py::dumps(&db.orders[o]))
}

fn modify_pending_order_payment(
    db: &mut Db,
    order_id: &Value,
    payment_method_id: &Value,
) -> Result<String, String> {
    let o = order_index(db, order_id)?;
    if !db.orders[o].status.is_pending_like() {
        return Err("Non-pending order cannot be modified".into());
    }
    let user_id = db.orders[o].user_id.clone();
    let pm = payment_method_index(db, &user_id, payment_method_id)?;
    let history = &db.orders[o].payment_history;
    if history.len() != 1 || history[0].transaction_type != TransactionType::Payment {
        return Err("There should be exactly one payment for a pending order".into());
    }
    let first = history[0].clone();
    if payment_method_id.as_str() == Some(first.payment_method_id.as_str()) {
        return Err("The new payment method should be different from the current one".into());
    }
    let amount = first.amount;
    if let Some(balance) = gift_card_balance(db, pm)
        && *balance < amount
    {
        return Err("Insufficient gift card balance to pay for the order".into());
    }
    db.orders[o].payment_history.extend([
        OrderPayment {
            transaction_type: TransactionType::Payment,
            amount,
            payment_method_id: py::str_of(payment_method_id),
        },
        OrderPayment {
            transaction_type: TransactionType::Refund,
            amount,
            payment_method_id: first.payment_method_id.clone(),
        },
    ]);
    if let Some(balance) = gift_card_balance(db, pm) {
        *balance = py::round2(*balance - amount);
    }
    let old = payment_method_index(db, &user_id, &Value::String(first.payment_method_id))?;
    if let Some(balance) = gift_card_balance(db, old) {
        *balance = py::round2(*balance + amount);
    }
    Ok(py::dumps(&db.orders[o]))
}

fn return_delivered_order_items(
    db: &mut Db,
    order_id: &Value,
    item_ids: &Value,
    payment_method_id: &Value,
) -> Result<String, String> {
    let o = order_index(db, order_id)?;
    if db.orders[o].status != OrderStatus::Delivered {
        return Err("Non-delivered order cannot be returned".into());
    }
    let u = user_index(db, &Value::String(db.orders[o].user_id.clone()))?;
    let user_id = db.users[u].user_id.clone();
    let pm = payment_method_index(db, &user_id, payment_method_id)?;
    let is_gift_card = matches!(
        db.users[pm.0].payment_methods[pm.1],
        PaymentMethod::GiftCard { .. }
    );
    if !is_gift_card {
        let first = db.orders[o]
            .payment_history
            .first()
            .ok_or_else(|| "list index out of range".to_string())?;
        if payment_method_id.as_str() != Some(first.payment_method_id.as_str()) {
            return Err("Payment method should be the original payment method".into());
        }
    }
    let held: Vec<String> = db.orders[o]
        .items
        .iter()
        .map(|i| i.item_id.clone())
        .collect();
    let items = check_item_counts(item_ids, &held, |_| "Some item not found".into())?;
    let order = &mut db.orders[o];
    order.status = OrderStatus::ReturnRequested;
    order.return_items = Some(sorted_strings(&items));
    order.return_payment_method_id = Some(py::str_of(payment_method_id));
    Ok(py::dumps(&db.orders[o]))
}

/// `value.lower()`: strings only.
fn lower(v: &Value) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.to_lowercase()),
        other => Err(format!(
            "'{}' object has no attribute 'lower'",
            py::type_name(other)
        )),
    }
}

fn find_user_id_by_name_zip(
    db: &Db,
    first_name: &Value,
    last_name: &Value,
    zip: &Value,
) -> Result<String, String> {
    for (user_id, user) in &db.users {
        if user.name.first_name.to_lowercase() == lower(first_name)?
            && user.name.last_name.to_lowercase() == lower(last_name)?
            && zip.as_str() == Some(user.address.zip.as_str())
        {
            return Ok(user_id.clone());
        }
    }
    Err("User not found".into())
}

fn find_user_id_by_email(db: &Db, email: &Value) -> Result<String, String> {
    for (user_id, user) in &db.users {
        if user.email.to_lowercase() == lower(email)? {
            return Ok(user_id.clone());
        }
    }
    Err("User not found".into())
}
