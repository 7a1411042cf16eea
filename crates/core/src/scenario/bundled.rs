//! The six SAGE scenarios, compiled into the binary so `sage run` works from anywhere.

/// (file name, YAML text) of every bundled scenario, in alphabetical order.
pub const BUNDLED: [(&str, &str); 6] = [
    (
        "airline_refund.yaml",
        include_str!("../../../../scenarios/airline_refund.yaml"),
    ),
    (
        "ecommerce_refund.yaml",
        include_str!("../../../../scenarios/ecommerce_refund.yaml"),
    ),
    (
        "logistics_delivery.yaml",
        include_str!("../../../../scenarios/logistics_delivery.yaml"),
    ),
    (
        "online_education.yaml",
        include_str!("../../../../scenarios/online_education.yaml"),
    ),
    (
        "property_service.yaml",
        include_str!("../../../../scenarios/property_service.yaml"),
    ),
    (
        "telecom_package.yaml",
        include_str!("../../../../scenarios/telecom_package.yaml"),
    ),
];

/// The bundled support-desk store, Northline: (store.yaml, cases.yaml).
pub const NORTHLINE: (&str, &str) = (
    include_str!("../../../../scenarios/northline/store.yaml"),
    include_str!("../../../../scenarios/northline/cases.yaml"),
);
