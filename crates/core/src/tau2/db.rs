//! The retail database (tau2's `RetailDB`): products, users and orders, read from db.json text.
//!
//! Every type serializes as tau2's pydantic `model_dump` does: fields in declaration order,
//! optional fields present as `null`, maps in insertion order.

use super::py;
use super::tasks::json_error;
use crate::scenario::{Problem, ScenarioError};
use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The largest db.json accepted, in bytes (the shipped one is about 2.8 MB).
pub const MAX_DB_BYTES: usize = 64 << 20;
/// The most products, users or orders accepted in each map.
pub const MAX_ENTRIES: usize = 200_000;
/// The most entries of any list or map inside one record (variants, items, payments, ...).
pub const MAX_INNER: usize = 10_000;

/// The retail database.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Db {
    /// Products by product id.
    pub products: IndexMap<String, Product>,
    /// Users by user id.
    pub users: IndexMap<String, User>,
    /// Orders by order id (`#W0000000`).
    pub orders: IndexMap<String, Order>,
}

/// A product and its variants (items).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Product {
    /// Name of the product.
    pub name: String,
    /// Its id.
    pub product_id: String,
    /// Variants by item id.
    pub variants: IndexMap<String, Variant>,
}

/// One variant of a product: an item that can be ordered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Variant {
    /// The item id.
    pub item_id: String,
    /// Option names to values (`color`, `size`, ...).
    pub options: IndexMap<String, String>,
    /// Whether it is in stock.
    pub available: bool,
    /// Its price.
    pub price: f64,
}

/// A user's name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UserName {
    /// First name.
    pub first_name: String,
    /// Last name.
    pub last_name: String,
}

/// A postal address (field order as tau2 declares it: country before state).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Address {
    /// First line.
    pub address1: String,
    /// Second line (may be empty).
    pub address2: String,
    /// City.
    pub city: String,
    /// Country.
    pub country: String,
    /// State or province.
    pub state: String,
    /// Postal code.
    pub zip: String,
}

/// A payment method of a user, told apart by its `source`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "source")]
pub enum PaymentMethod {
    /// A credit card.
    #[serde(rename = "credit_card")]
    CreditCard {
        /// Its id.
        id: String,
        /// Brand (visa, mastercard, ...).
        brand: String,
        /// Last four digits.
        last_four: String,
    },
    /// A gift card with a balance; refunds to it are immediate.
    #[serde(rename = "gift_card")]
    GiftCard {
        /// Its id.
        id: String,
        /// The balance.
        balance: f64,
    },
    /// A PayPal account.
    #[serde(rename = "paypal")]
    Paypal {
        /// Its id.
        id: String,
    },
}

/// A user with their payment methods and order ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct User {
    /// Its id.
    pub user_id: String,
    /// Name.
    pub name: UserName,
    /// Default address.
    pub address: Address,
    /// Email.
    pub email: String,
    /// Payment methods by id.
    pub payment_methods: IndexMap<String, PaymentMethod>,
    /// Ids of the user's orders.
    pub orders: Vec<String>,
}

/// One shipment of an order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fulfillment {
    /// Tracking ids.
    pub tracking_id: Vec<String>,
    /// Item ids shipped.
    pub item_ids: Vec<String>,
}

/// An item of an order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderItem {
    /// Product name.
    pub name: String,
    /// Product id.
    pub product_id: String,
    /// Item (variant) id.
    pub item_id: String,
    /// Price paid.
    pub price: f64,
    /// The variant's options.
    pub options: IndexMap<String, String>,
}

/// Whether a transaction paid or refunded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TransactionType {
    /// A payment.
    Payment,
    /// A refund.
    Refund,
}

/// A payment or refund of an order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderPayment {
    /// Payment or refund.
    pub transaction_type: TransactionType,
    /// The amount.
    pub amount: f64,
    /// The payment method used.
    pub payment_method_id: String,
}

/// The status of an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum OrderStatus {
    /// Processed (shipped, not delivered).
    #[serde(rename = "processed")]
    Processed,
    /// Pending.
    #[serde(rename = "pending")]
    Pending,
    /// Pending, after its items were modified.
    #[serde(rename = "pending (item modified)")]
    PendingItemModified,
    /// Delivered.
    #[serde(rename = "delivered")]
    Delivered,
    /// Cancelled.
    #[serde(rename = "cancelled")]
    Cancelled,
    /// An exchange was requested.
    #[serde(rename = "exchange requested")]
    ExchangeRequested,
    /// A return was requested.
    #[serde(rename = "return requested")]
    ReturnRequested,
}

impl OrderStatus {
    /// Whether tau2's loose check `"pending" in order.status` holds.
    pub fn is_pending_like(self) -> bool {
        matches!(
            self,
            OrderStatus::Pending | OrderStatus::PendingItemModified
        )
    }
}

/// Why an order was cancelled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CancelReason {
    /// `no longer needed`.
    #[serde(rename = "no longer needed")]
    NoLongerNeeded,
    /// `ordered by mistake`.
    #[serde(rename = "ordered by mistake")]
    OrderedByMistake,
}

/// A number that Python may hold as an int or a float. tau2 stores the int `0` as the price
/// difference of an exchange of no items (it assigns without validation), and `json.dumps`
/// then writes `0`, not `0.0`, which changes the database hash.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum PyNumber {
    /// A Python int.
    Int(i64),
    /// A Python float.
    Float(f64),
}

impl Serialize for PyNumber {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            PyNumber::Int(i) => s.serialize_i64(i),
            PyNumber::Float(x) => s.serialize_f64(x),
        }
    }
}

impl<'de> Deserialize<'de> for PyNumber {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // pydantic validates a float field: an int in the file becomes a float.
        f64::deserialize(d).map(PyNumber::Float)
    }
}

/// An order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Order {
    /// Its id.
    pub order_id: String,
    /// The user who placed it.
    pub user_id: String,
    /// Shipping address.
    pub address: Address,
    /// Items.
    pub items: Vec<OrderItem>,
    /// Status.
    pub status: OrderStatus,
    /// Shipments.
    pub fulfillments: Vec<Fulfillment>,
    /// Payments and refunds, oldest first.
    pub payment_history: Vec<OrderPayment>,
    /// Set when cancelled.
    #[serde(default)]
    pub cancel_reason: Option<CancelReason>,
    /// Item ids to exchange, sorted.
    #[serde(default)]
    pub exchange_items: Option<Vec<String>>,
    /// New item ids of the exchange, sorted.
    #[serde(default)]
    pub exchange_new_items: Option<Vec<String>>,
    /// Payment method of the exchange.
    #[serde(default)]
    pub exchange_payment_method_id: Option<String>,
    /// Price difference of the exchange.
    #[serde(default)]
    pub exchange_price_difference: Option<PyNumber>,
    /// Item ids to return, sorted.
    #[serde(default)]
    pub return_items: Option<Vec<String>>,
    /// Payment method of the return's refund.
    #[serde(default)]
    pub return_payment_method_id: Option<String>,
}

/// The top level of db.json, each record left as text to parse on its own (so an error can
/// name the record it is in).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDb<'a> {
    #[serde(borrow)]
    products: IndexMap<String, &'a RawValue>,
    #[serde(borrow)]
    users: IndexMap<String, &'a RawValue>,
    #[serde(borrow)]
    orders: IndexMap<String, &'a RawValue>,
}

impl Db {
    /// Parses db.json text; `file` labels errors. Every error names the record (`orders["#W1"]`)
    /// and what is wrong with it, at its line and column in the file.
    pub fn from_json(text: &str, file: &str) -> Result<Db, ScenarioError> {
        if text.len() > MAX_DB_BYTES {
            return Err(ScenarioError::one(
                file,
                Problem::BadDeclaration {
                    at: "db".into(),
                    found: format!("{} bytes", text.len()),
                    expected: format!("at most {MAX_DB_BYTES} bytes"),
                },
            ));
        }
        let raw: RawDb =
            serde_json::from_str(text).map_err(|e| json_error(file, text, None, &e))?;
        let mut problems = Vec::new();
        let products: IndexMap<String, Product> =
            records(file, text, "products", &raw.products, &mut problems);
        let users: IndexMap<String, User> = records(file, text, "users", &raw.users, &mut problems);
        let orders: IndexMap<String, Order> =
            records(file, text, "orders", &raw.orders, &mut problems);
        for (key, p) in &products {
            inner(&mut problems, "products", key, "variants", p.variants.len());
        }
        for (key, u) in &users {
            inner(
                &mut problems,
                "users",
                key,
                "payment_methods",
                u.payment_methods.len(),
            );
            inner(&mut problems, "users", key, "orders", u.orders.len());
        }
        for (key, o) in &orders {
            inner(&mut problems, "orders", key, "items", o.items.len());
            inner(
                &mut problems,
                "orders",
                key,
                "fulfillments",
                o.fulfillments.len(),
            );
            inner(
                &mut problems,
                "orders",
                key,
                "payment_history",
                o.payment_history.len(),
            );
        }
        if problems.is_empty() {
            Ok(Db {
                products,
                users,
                orders,
            })
        } else {
            problems.truncate(20);
            Err(ScenarioError {
                file: file.into(),
                problems,
            })
        }
    }

    /// The text tau2 hashes to compare databases (`get_db_hash`): `json.dumps` of the whole
    /// `model_dump()` with sorted keys. Two databases are the same for tau2 exactly when
    /// these texts are equal (its SHA-256 of this text is the hash).
    pub fn canonical_json(&self) -> String {
        let mut out = String::with_capacity(3 << 20);
        self.canon(&mut out);
        out
    }

    /// Whether tau2 would find the two databases equal (`get_db_hash` equality), record by
    /// record.
    pub fn same_state(&self, other: &Db) -> bool {
        same_map(&self.products, &other.products, |a, b| {
            a.variants
                .values()
                .zip(b.variants.values())
                .all(|(x, y)| x.price.to_bits() == y.price.to_bits())
        }) && same_map(&self.users, &other.users, |a, b| {
            a.payment_methods
                .values()
                .zip(b.payment_methods.values())
                .all(|(x, y)| match (x, y) {
                    (
                        PaymentMethod::GiftCard { balance: p, .. },
                        PaymentMethod::GiftCard { balance: q, .. },
                    ) => p.to_bits() == q.to_bits(),
                    _ => true,
                })
        }) && same_map(&self.orders, &other.orders, |a, b| {
            let diff = match (a.exchange_price_difference, b.exchange_price_difference) {
                (Some(PyNumber::Float(p)), Some(PyNumber::Float(q))) => p.to_bits() == q.to_bits(),
                _ => true,
            };
            diff && a
                .items
                .iter()
                .zip(&b.items)
                .all(|(x, y)| x.price.to_bits() == y.price.to_bits())
                && a.payment_history
                    .iter()
                    .zip(&b.payment_history)
                    .all(|(x, y)| x.amount.to_bits() == y.amount.to_bits())
        })
    }
}

/// Two maps of records hold the same keys, and each record the same canonical text. Records
/// equal as values are the same unless a float differs in its bits (`-0.0`, written apart
/// from `0.0`), which `same_bits` checks; any other pair is compared by text.
fn same_map<T: Canon + PartialEq>(
    a: &IndexMap<String, T>,
    b: &IndexMap<String, T>,
    same_bits: impl Fn(&T, &T) -> bool,
) -> bool {
    a.len() == b.len()
        && a.iter().all(|(k, x)| match b.get(k) {
            None => false,
            Some(y) => (x == y && same_bits(x, y)) || canon_text(x) == canon_text(y),
        })
}

fn canon_text<T: Canon>(v: &T) -> String {
    let mut out = String::new();
    v.canon(&mut out);
    out
}

/// Writing as `json.dumps(model_dump(), sort_keys=True)` does.
trait Canon {
    fn canon(&self, out: &mut String);
}

impl Canon for String {
    fn canon(&self, out: &mut String) {
        py::push_json_str(out, self);
    }
}

impl Canon for f64 {
    fn canon(&self, out: &mut String) {
        out.push_str(&py::json_float(*self));
    }
}

impl Canon for bool {
    fn canon(&self, out: &mut String) {
        out.push_str(if *self { "true" } else { "false" });
    }
}

impl<T: Canon> Canon for Option<T> {
    fn canon(&self, out: &mut String) {
        match self {
            Some(v) => v.canon(out),
            None => out.push_str("null"),
        }
    }
}

impl<T: Canon> Canon for Vec<T> {
    fn canon(&self, out: &mut String) {
        out.push('[');
        for (i, v) in self.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            v.canon(out);
        }
        out.push(']');
    }
}

impl<T: Canon> Canon for IndexMap<String, T> {
    fn canon(&self, out: &mut String) {
        let mut keys: Vec<&String> = self.keys().collect();
        keys.sort();
        out.push('{');
        for (i, k) in keys.into_iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            py::push_json_str(out, k);
            out.push_str(": ");
            self[k].canon(out);
        }
        out.push('}');
    }
}

impl Canon for PyNumber {
    fn canon(&self, out: &mut String) {
        match self {
            PyNumber::Int(i) => out.push_str(&i.to_string()),
            PyNumber::Float(x) => x.canon(out),
        }
    }
}

/// The serde name of a unit enum value (status, reason, transaction type).
fn enum_name<T: Serialize>(v: &T) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

macro_rules! canon_enum {
    ($($t:ty),*) => {$(
        impl Canon for $t {
            fn canon(&self, out: &mut String) {
                py::push_json_str(out, &enum_name(self));
            }
        }
    )*};
}
canon_enum!(OrderStatus, CancelReason, TransactionType);

/// Writes an object whose fields are given in sorted order.
macro_rules! canon_struct {
    ($t:ty { $($field:ident),* }) => {
        impl Canon for $t {
            fn canon(&self, out: &mut String) {
                out.push('{');
                let mut first = true;
                $(
                    if !first {
                        out.push_str(", ");
                    }
                    first = false;
                    out.push_str(concat!("\"", stringify!($field), "\": "));
                    self.$field.canon(out);
                )*
                let _ = first;
                out.push('}');
            }
        }
    };
}
canon_struct!(Db {
    orders,
    products,
    users
});
canon_struct!(Product {
    name,
    product_id,
    variants
});
canon_struct!(Variant {
    available,
    item_id,
    options,
    price
});
canon_struct!(UserName {
    first_name,
    last_name
});
canon_struct!(Address {
    address1,
    address2,
    city,
    country,
    state,
    zip
});
canon_struct!(User {
    address,
    email,
    name,
    orders,
    payment_methods,
    user_id
});
canon_struct!(Fulfillment {
    item_ids,
    tracking_id
});
canon_struct!(OrderItem {
    item_id,
    name,
    options,
    price,
    product_id
});
canon_struct!(OrderPayment {
    amount,
    payment_method_id,
    transaction_type
});
canon_struct!(Order {
    address,
    cancel_reason,
    exchange_items,
    exchange_new_items,
    exchange_payment_method_id,
    exchange_price_difference,
    fulfillments,
    items,
    order_id,
    payment_history,
    return_items,
    return_payment_method_id,
    status,
    user_id
});

impl Canon for PaymentMethod {
    fn canon(&self, out: &mut String) {
        let source = |out: &mut String, name: &str| {
            out.push_str("\"source\": ");
            py::push_json_str(out, name);
        };
        out.push('{');
        match self {
            PaymentMethod::CreditCard {
                id,
                brand,
                last_four,
            } => {
                out.push_str("\"brand\": ");
                brand.canon(out);
                out.push_str(", \"id\": ");
                id.canon(out);
                out.push_str(", \"last_four\": ");
                last_four.canon(out);
                out.push_str(", ");
                source(out, "credit_card");
            }
            PaymentMethod::GiftCard { id, balance } => {
                out.push_str("\"balance\": ");
                balance.canon(out);
                out.push_str(", \"id\": ");
                id.canon(out);
                out.push_str(", ");
                source(out, "gift_card");
            }
            PaymentMethod::Paypal { id } => {
                out.push_str("\"id\": ");
                id.canon(out);
                out.push_str(", ");
                source(out, "paypal");
            }
        }
        out.push('}');
    }
}

fn records<T: serde::de::DeserializeOwned>(
    file: &str,
    text: &str,
    map: &str,
    raw: &IndexMap<String, &RawValue>,
    problems: &mut Vec<Problem>,
) -> IndexMap<String, T> {
    if raw.len() > MAX_ENTRIES {
        problems.push(Problem::BadDeclaration {
            at: map.into(),
            found: format!("{} entries", raw.len()),
            expected: format!("at most {MAX_ENTRIES}"),
        });
        return IndexMap::new();
    }
    let mut out = IndexMap::with_capacity(raw.len());
    for (key, value) in raw {
        match serde_json::from_str::<T>(value.get()) {
            Ok(record) => {
                out.insert(key.clone(), record);
            }
            Err(e) => {
                let at = format!("{map}[{}]", py::str_repr(key));
                problems.extend(json_error(file, text, Some((&at, value.get())), &e).problems);
            }
        }
    }
    out
}

fn inner(problems: &mut Vec<Problem>, map: &str, key: &str, field: &str, len: usize) {
    if len > MAX_INNER {
        problems.push(Problem::BadDeclaration {
            at: format!("{map}[{}].{field}", py::str_repr(key)),
            found: format!("{len} entries"),
            expected: format!("at most {MAX_INNER}"),
        });
    }
}
