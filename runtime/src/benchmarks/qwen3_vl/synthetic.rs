//! Generated products for development systems without the catalogue (never submittable): each
//! product follows from its index, with candidate categories from a small fixed taxonomy, its
//! ground truth among them, and one tiny PNG, so requests have the real shape and an accuracy run
//! against the stand-in (which answers the ground truth) scores as a perfect model would.

use super::catalogue::{ImageFormat, Product, ProductImage, Truth};
use std::sync::{Arc, OnceLock};

/// A 2x2 RGB PNG (written by Pillow).
const PNG: [u8; 79] = [
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x02, 0x08, 0x02, 0x00, 0x00, 0x00,
    0xfd, 0xd4, 0x9a, 0x73, 0x00, 0x00, 0x00, 0x16, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x3c, 0x51, 0xa1, 0xc1, 0xc0, 0xc0, 0xc0, 0xc4, 0xc0, 0xc0, 0xc0, 0xc0, 0xc0, 0x00,
    0x00, 0x11, 0xaa, 0x01, 0x6c, 0x79, 0xc6, 0x76, 0x26, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// Category paths in the catalogue's style (levels joined by `" > "`).
const TAXONOMY: [&str; 8] = [
    "Apparel & Accessories > Clothing > Shirts & Tops",
    "Apparel & Accessories > Shoes",
    "Home & Garden > Kitchen & Dining > Tableware > Drinkware > Mugs",
    "Home & Garden > Decor > Candles",
    "Electronics > Audio > Headphones",
    "Sporting Goods > Outdoor Recreation > Cycling > Bicycles",
    "Toys & Games > Puzzles",
    "Health & Beauty > Personal Care > Cosmetics",
];

fn image() -> Arc<[u8]> {
    static IMAGE: OnceLock<Arc<[u8]>> = OnceLock::new();
    IMAGE.get_or_init(|| Arc::from(&PNG[..])).clone()
}

/// The ground truth of product `index`.
pub fn truth(index: usize) -> Truth {
    Truth { category: TAXONOMY[index % TAXONOMY.len()].to_string(), brand: format!("brand {}", index % 97), is_secondhand: index.is_multiple_of(5) }
}

/// The ground truth of the first `count` products.
pub fn truths(count: usize) -> Vec<Truth> {
    (0..count).map(truth).collect()
}

/// Product `index`: its candidates are the taxonomy rotated by the index.
pub fn product(index: usize) -> Product {
    let categories = (0..TAXONOMY.len()).map(|k| TAXONOMY[(index + k * 3) % TAXONOMY.len()].to_string()).collect();
    Product {
        title: format!("Synthetic product {index}"),
        description: format!("A generated product (index {index}) for development runs; it's never submittable."),
        categories,
        image: ProductImage { format: ImageFormat::Png, bytes: image() },
        truth: truth(index),
    }
}
