"""Cedar & Co., the shop: catalogue, search and filters, product pages with reviews, cart,
wishlist, checkout with shipping methods and coupons, orders, and the customer's account."""
