(function(){
// Click a th[data-sort] heading: the rows are sorted by the data-value of their cell whose
// data-metric is the heading's key (numbers numerically, missing values last); descending
// first, again to reverse. aria-sort on the heading says the order.
document.querySelectorAll("table th[data-sort]").forEach(function(th){
  th.addEventListener("click",function(){
    var table=th.closest("table"),body=table.tBodies[0],key=th.getAttribute("data-sort");
    var asc=th.getAttribute("aria-sort")==="descending";
    table.querySelectorAll("th[data-sort]").forEach(function(h){h.removeAttribute("aria-sort");});
    th.setAttribute("aria-sort",asc?"ascending":"descending");
    var rows=Array.prototype.slice.call(body.rows);
    function val(r){
      var cells=r.querySelectorAll("[data-metric]");
      for(var i=0;i<cells.length;i++){if(cells[i].getAttribute("data-metric")===key)return cells[i].getAttribute("data-value")||"";}
      return "";
    }
    rows.sort(function(a,b){
      var x=val(a),y=val(b);
      if(x===""&&y==="")return 0;if(x==="")return 1;if(y==="")return -1;
      var nx=Number(x),ny=Number(y),d=(!isNaN(nx)&&!isNaN(ny))?nx-ny:(x<y?-1:x>y?1:0);
      return asc?d:-d;
    });
    rows.forEach(function(r){body.appendChild(r);});
  });
});
})();
